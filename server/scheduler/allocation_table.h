// The buffers a backend allocates for one job on one device. The planner
// budgets a device with the table's sums and the backend allocates each
// buffer from the table's own entries (AccountedArray::Allocate), so what is
// planned and what is allocated cannot drift apart.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

namespace pricer {

struct Buffer {
  absl::string_view name;  // named in allocation errors: "terminal prices ST"
  int64_t elements = 0;
  int64_t element_bytes = 0;

  // What allocating it counts (an empty buffer still takes one element).
  int64_t bytes() const { return std::max<int64_t>(elements, 1) * element_bytes; }
};

template <typename T>
Buffer BufferOf(absl::string_view name, int64_t elements) {
  return Buffer{name, elements, static_cast<int64_t>(sizeof(T))};
}

struct AllocationTable {
  // Held while the job's state is on the device (from StartJob until the
  // state is destroyed).
  std::vector<Buffer> resident;
  // Held by each shard running at once (a backend may keep a set for the
  // job's next shard; the engine commits one set per shard in flight).
  std::vector<Buffer> per_shard;
  // Page-locked host memory each shard running at once stages through (the
  // cuda backend's copies): counted against the host's pinned memory bound
  // (--pinned-memory), not the device's budget. Empty for the cpu backend.
  std::vector<Buffer> pinned_per_shard;

  int64_t resident_bytes() const { return Sum(resident); }
  int64_t shard_bytes() const { return Sum(per_shard); }
  int64_t pinned_shard_bytes() const { return Sum(pinned_per_shard); }

 private:
  static int64_t Sum(const std::vector<Buffer>& buffers) {
    int64_t bytes = 0;
    for (const Buffer& b : buffers) bytes += b.bytes();
    return bytes;
  }
};

}  // namespace pricer
