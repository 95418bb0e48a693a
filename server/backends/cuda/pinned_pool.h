// The page-locked host blocks a GPU's shards stage through and send from,
// kept for reuse: cudaHostAlloc is slow (it pins every page) and cudaFreeHost
// synchronizes the whole device, so neither belongs on the path of a shard
// or of a job's start and end. A block in use is counted in the host's
// pinned account (--pinned-memory); given back, it waits here, uncounted, for
// the next Take it is large enough for (and at most twice as large as),
// while the blocks in use and the idle ones together stay within the
// account's budget: at most kMaxIdle wait, and
// a Take that needs a new block frees idle ones until it fits.
//
// A full-output block is the memory the result chunks are sent from (Share:
// the GPU copies SC into it, gRPC sends from it, nothing copies it on the
// host). Once shared it leaves the pinned account for the engine's pending
// bytes (--max-pending-bytes), which already count the chunks' values, and
// comes back here when the last chunk is sent.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/scheduler/allocation_table.h"
#include "server/scheduler/memory_account.h"

namespace pricer {

struct PinnedBlock {
  void* data = nullptr;
  int64_t bytes = 0;   // its capacity
  Reservation charge;  // its bytes in the pinned account, while in use

  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// Where a pool's blocks come from: CudaPinned for a GPU's; host memory in
// tests (tests/backends/cuda/pinned_pool_test.cc).
struct BlockMemory {
  std::function<absl::Status(int64_t bytes, absl::string_view what, void** out)> allocate;
  std::function<void(void* data)> free;
};

class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  static constexpr size_t kMaxIdle = 8;
  using Handle = std::unique_ptr<PinnedBlock, std::function<void(PinnedBlock*)>>;

  // A pool whose blocks come from `memory`, counted in `account`.
  static std::shared_ptr<PinnedPool> Make(std::shared_ptr<MemoryAccount> account,
                                          BlockMemory memory);
  // Page-locked memory for GPU `ordinal` (named `device` in errors):
  // cudaHostAlloc, and cudaFreeHost with that GPU current (a gRPC thread
  // dropping the last chunk has none: not the runtime's default device 0).
  static BlockMemory CudaPinned(int ordinal, std::string device);
  ~PinnedPool();  // frees the idle blocks

  // A block of at least `buffer`'s bytes, holding whatever it last held;
  // RESOURCE_EXHAUSTED naming `buffer` when it does not fit the account even
  // with the idle blocks freed. Back here when the handle goes. On the
  // caller's current GPU (the job's).
  absl::StatusOr<Handle> Take(const Buffer& buffer) ABSL_LOCKS_EXCLUDED(mu_);

  // `block` for the chunks cut from it: out of the pinned account until the
  // last reference goes, then back here.
  std::shared_ptr<const void> Share(Handle block);

  // Blocks waiting, and their bytes.
  size_t idle_blocks() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t idle_bytes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  PinnedPool(std::shared_ptr<MemoryAccount> account, BlockMemory memory)
      : account_(std::move(account)), memory_(std::move(memory)) {}

  // Keeps `block` idle (uncounted) or frees it.
  void Give(PinnedBlock* block) ABSL_LOCKS_EXCLUDED(mu_);
  // `block` (counted) for the caller; back here when the handle goes.
  Handle Wrap(std::unique_ptr<PinnedBlock> block);
  // A new block for `buffer`, already counted: idle blocks freed first as
  // far as the budget needs.
  absl::StatusOr<std::unique_ptr<PinnedBlock>> Allocate(const Buffer& buffer)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Free(std::vector<std::unique_ptr<PinnedBlock>> blocks);

  const std::shared_ptr<MemoryAccount> account_;
  const BlockMemory memory_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<PinnedBlock>> idle_ ABSL_GUARDED_BY(mu_);
  int64_t idle_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace pricer
