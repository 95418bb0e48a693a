// The output buffers of a job's shards, kept for its next shards once the
// chunks cut from them have been sent. A shard's output is tens of MB, which
// glibc always maps fresh (its mmap threshold stops at 32 MiB): every page of
// a new buffer faults and is zeroed by the kernel, 6% of a full-output run's
// time when each shard had its own.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace pricer {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // At most this many free buffers are kept; more are freed.
  static constexpr size_t kMaxFree = 8;

  static std::shared_ptr<BufferPool> Make() { return std::shared_ptr<BufferPool>(new BufferPool); }

  // A free buffer of capacity >= `floats` (the smallest), with whatever values
  // it last held, or an empty one when none is free.
  std::vector<float> Take(size_t floats) ABSL_LOCKS_EXCLUDED(mu_);
  // Shares `values`; when the last reference goes, they come back here.
  std::shared_ptr<const std::vector<float>> Share(std::vector<float> values);

  size_t free_buffers() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  BufferPool() = default;
  void Give(std::vector<float> values) ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  std::vector<std::vector<float>> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pricer
