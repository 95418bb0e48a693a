// The server's side of a client's shared-memory output ring
// (v1::SharedMemoryRing, common/shared_ring.h): a Price call that names one
// writes each chunk's values into the ring's next slot instead of the reply.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "pricer/v1/pricer.pb.h"
#include "server/scheduler/result_stream.h"

namespace pricer {

// The ring of `output.shared_memory`, opened; null when the request names
// none. FAILED_PRECONDITION when the server does not allow it (`allowed`:
// --shared-memory-output), INVALID_ARGUMENT naming the field for a request
// without full output or a bad ring (SharedOutputWriter::Open).
class SharedOutputWriter;
absl::StatusOr<std::unique_ptr<SharedOutputWriter>> OpenRequestedRing(
    const v1::OutputOptions& output, bool allowed);

class SharedOutputWriter {
 public:
  // Opens and maps the ring `ring` names (output.shared_memory of a request
  // for full output). INVALID_ARGUMENT naming the field for a bad value or a
  // file that is not the ring described: missing, not a sealed memfd, too
  // small, another token.
  static absl::StatusOr<std::unique_ptr<SharedOutputWriter>> Open(const v1::SharedMemoryRing& ring);
  // Stops the waiting thread (a pending `on_free` is dropped) and unmaps.
  ~SharedOutputWriter();
  SharedOutputWriter(const SharedOutputWriter&) = delete;
  SharedOutputWriter& operator=(const SharedOutputWriter&) = delete;

  // Writes `values` into the next slot if the client has released it, and
  // returns 1 + that slot; else returns 0 and runs `on_free` once (on the
  // writer's own thread) when the client releases it. `rows` and `column`:
  // the chunk's, which place it in the slot (SharedMemoryRing.phase).
  // INTERNAL for values that do not fit a slot there (none do not: the
  // smallest slot holds the largest chunk 4095 bytes in).
  absl::StatusOr<int32_t> TryWrite(const SharedFloats& values, int64_t rows, int64_t column,
                                   std::function<void()> on_free);

 private:
  SharedOutputWriter(char* base, int64_t bytes, const v1::SharedMemoryRing& ring)
      : base_(base),
        bytes_(bytes),
        slots_(ring.slots()),
        slot_bytes_(ring.slot_bytes()),
        phase_(ring.phase()) {}
  bool NextFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The thread: runs on_free_ once the next slot is free.
  void Wait();

  char* const base_;  // the mapping
  const int64_t bytes_;
  const int32_t slots_;
  const int64_t slot_bytes_;
  const int64_t phase_;
  absl::Mutex mu_;
  int64_t written_ ABSL_GUARDED_BY(mu_) = 0;  // chunks written (`released` counts them mod 2^32)
  std::function<void()> on_free_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread waiter_;  // started by the first TryWrite that finds the ring full
};

}  // namespace pricer
