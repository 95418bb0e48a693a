// The client's side of a shared-memory output ring (pricer.proto's
// SharedMemoryRing, common/shared_ring.h): a sealed memfd of this process
// that a server on the same host writes SC's chunks into, in place of the
// socket. The ring's slots are reused in turn, so a result of any size
// passes through a few MiB of memory touched once.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "client/lib/reply_decoding.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

class SharedOutputReader {
 public:
  // A new ring of `slots` slots of 4 MiB (shared_ring::kMinSlotBytes; 1 to
  // 1,024 slots), its pages allocated, with a
  // random token; `phase` places the values in their slots
  // (SharedMemoryRing.phase).
  static absl::StatusOr<std::unique_ptr<SharedOutputReader>> Create(int32_t slots,
                                                                    int32_t phase = 0);
  ~SharedOutputReader();
  SharedOutputReader(const SharedOutputReader&) = delete;
  SharedOutputReader& operator=(const SharedOutputReader&) = delete;

  // What a request names the ring by (output.shared_memory).
  const v1::SharedMemoryRing& ring() const { return ring_; }

  // The values of a chunk in slot `shared_slot` - 1 (its shared_slot): its
  // `columns` columns of `rows` rows from column `column`. INTERNAL, saying
  // what the server sent, when that is not the slot the server writes next
  // or when they do not fit a slot. They stay valid until Release.
  absl::StatusOr<ValueBytes> Take(int32_t shared_slot, int64_t rows, int64_t column,
                                  int64_t columns);
  // The chunk taken last has been handled: the server may write its slot
  // again.
  void Release();

 private:
  SharedOutputReader(int fd, char* base, int64_t bytes) : fd_(fd), base_(base), bytes_(bytes) {}

  const int fd_;
  char* const base_;  // the mapping
  const int64_t bytes_;
  v1::SharedMemoryRing ring_;
  int64_t taken_ = 0;  // chunks taken
};

}  // namespace pricer
