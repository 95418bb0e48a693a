// Large blocks of memory kept for reuse across shards and jobs, where getting
// a new one costs more than the work it holds:
// - a GPU's page-locked host blocks, which its shards stage through and send
//   from (cudaHostAlloc pins every page, cudaFreeHost synchronizes the whole
//   device: neither belongs on the path of a shard or of a job's start and
//   end; server/backends/cuda/pinned_memory.h);
// - the cpu backend's blocks of A and SC per running shard (Host()): tens of
//   MB each, which glibc maps fresh and the kernel faults in and zeroes page
//   by page for every job (40,000 faults and about 0.1 s of system time a
//   job at the original example, 100,000 columns).
// A block in use is counted in the pool's account (a GPU's: the host's
// pinned account, --pinned-memory; the cpu's: the device's budget), at its
// own size; given back, it waits here, uncounted, for the next Take it is
// large enough for (and at most twice as large as; for the cpu, of its very
// size: Reuse), while the blocks in use and the idle ones
// together stay within the account's budget: at most max_idle wait (the
// oldest gives way to a block given back), a Take
// that needs a new block frees idle ones until it fits, and FitIdle frees
// them for memory that the account's other users are about to take.
//
// A GPU's full-output block is the memory the result chunks are sent from
// (Share: the GPU copies SC into it, gRPC sends from it, nothing copies it
// on the host). Once shared it leaves the account for the engine's pending
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

struct PoolBlock {
  void* data = nullptr;
  int64_t bytes = 0;   // its capacity
  Reservation charge;  // its bytes in the pinned account, while in use

  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// Where a pool's blocks come from: BlockPool::Host() (the heap), or a GPU's
// page-locked memory (CudaPinnedMemory).
struct BlockMemory {
  std::function<absl::Status(int64_t bytes, absl::string_view what, void** out)> allocate;
  std::function<void(void* data)> free;
};

class BlockPool : public std::enable_shared_from_this<BlockPool> {
 public:
  // Blocks that may wait at once, unless Make says otherwise.
  static constexpr size_t kMaxIdle = 8;
  using Handle = std::unique_ptr<PoolBlock, std::function<void(PoolBlock*)>>;

  // A pool whose blocks come from `memory`, counted in `account`.
  // Which idle block a Take may reuse. A block is counted at its own size,
  // so a larger one counts more than the engine committed for the buffer
  // (AllocationTable): kExactSize where the account is the budget that the
  // engine commits a job's buffers against (the cpu's), so that a job's
  // later allocations still fit; kUpToTwice for a GPU's pinned blocks (a
  // shard's full-output block is not held as its statistics').
  enum class Reuse { kUpToTwice, kExactSize };

  static std::shared_ptr<BlockPool> Make(std::shared_ptr<MemoryAccount> account, BlockMemory memory,
                                         Reuse reuse = Reuse::kUpToTwice,
                                         size_t max_idle = kMaxIdle);
  // The heap (operator new[] and delete[]), each new block's pages faulted
  // in at once (resident from then on).
  static BlockMemory Host();
  ~BlockPool();  // frees the idle blocks

  // A block of at least `buffer`'s bytes, holding whatever it last held (an
  // idle one when its own size fits the account, else a new one of the
  // buffer's size); RESOURCE_EXHAUSTED naming `buffer` when that does not
  // fit the account even with the idle blocks freed. Back here when the handle goes. On the
  // caller's current GPU (the job's).
  absl::StatusOr<Handle> Take(const Buffer& buffer) ABSL_LOCKS_EXCLUDED(mu_);

  // `block` for the chunks cut from it: out of the pinned account until the
  // last reference goes, then back here.
  std::shared_ptr<const void> Share(Handle block);

  // Frees idle blocks until `bytes` more fit the account's budget beside
  // those in use and the idle ones left: before the account's other users
  // (AccountedArray) take that much.
  void FitIdle(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks waiting, and their bytes.
  size_t idle_blocks() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t idle_bytes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  BlockPool(std::shared_ptr<MemoryAccount> account, BlockMemory memory, Reuse reuse,
            size_t max_idle)
      : account_(std::move(account)),
        memory_(std::move(memory)),
        reuse_(reuse),
        max_idle_(max_idle) {}

  // Keeps `block` idle (uncounted) or frees it.
  void Give(PoolBlock* block) ABSL_LOCKS_EXCLUDED(mu_);
  // `block` (counted) for the caller; back here when the handle goes.
  Handle Wrap(std::unique_ptr<PoolBlock> block);
  // A new block for `buffer`, already counted: idle blocks freed first as
  // far as the budget needs (FitIdle).
  absl::StatusOr<std::unique_ptr<PoolBlock>> Allocate(const Buffer& buffer)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Free(std::vector<std::unique_ptr<PoolBlock>> blocks);

  const std::shared_ptr<MemoryAccount> account_;
  const BlockMemory memory_;
  const Reuse reuse_;
  const size_t max_idle_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<PoolBlock>> idle_ ABSL_GUARDED_BY(mu_);
  int64_t idle_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace pricer
