#include "server/scheduler/block_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "common/status_macros.h"

namespace pricer {

std::shared_ptr<BlockPool> BlockPool::Make(std::shared_ptr<MemoryAccount> account,
                                           BlockMemory memory, Reuse reuse, size_t max_idle) {
  return std::shared_ptr<BlockPool>(
      new BlockPool(std::move(account), std::move(memory), reuse, max_idle));
}

BlockMemory BlockPool::Host() {
  BlockMemory memory;
  memory.allocate = [](int64_t bytes, absl::string_view, void** out) {
    *out = ::operator new[](static_cast<size_t>(bytes));
    // Every page faulted in once, here: the block's first user would fault
    // them in anyway, and an idle block is then resident whatever its users
    // wrote, as the devices' idle_block_bytes say. The kernel does it in one
    // call (MADV_POPULATE_WRITE, Linux 5.14: its zeroing and no write of
    // ours); a memset where it cannot. The pages at the ends hold the
    // allocator's own words: already resident.
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto at = reinterpret_cast<uintptr_t>(*out);
    const uintptr_t begin = (at + page - 1) / page * page;
    const uintptr_t end = (at + static_cast<uintptr_t>(bytes)) / page * page;
    if (end <= begin ||
        madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) != 0) {
      std::memset(*out, 0, static_cast<size_t>(bytes));
    }
    return absl::OkStatus();
  };
  memory.free = [](void* data) { ::operator delete[](data); };
  return memory;
}

BlockPool::~BlockPool() {
  std::vector<std::unique_ptr<PoolBlock>> idle;
  {
    absl::MutexLock lock(&mu_);
    idle.swap(idle_);
    idle_bytes_ = 0;
  }
  Free(std::move(idle));
}

absl::StatusOr<BlockPool::Handle> BlockPool::Take(const Buffer& buffer) {
  std::unique_ptr<PoolBlock> reused;
  {
    absl::MutexLock lock(&mu_);
    // The smallest idle block that is large enough, and at most twice as
    // large (or of the buffer's size: Reuse).
    const int64_t most = reuse_ == Reuse::kExactSize ? buffer.bytes() : 2 * buffer.bytes();
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      const int64_t bytes = (*it)->bytes;
      if (bytes >= buffer.bytes() && bytes <= most &&
          (best == idle_.end() || bytes < (*best)->bytes)) {
        best = it;
      }
    }
    if (best != idle_.end()) {
      reused = std::move(*best);
      idle_.erase(best);
      idle_bytes_ -= reused->bytes;
    }
  }
  if (reused != nullptr) {
    // Counted at its own size, which may pass the buffer's; where that does
    // not fit, it waits again and a block of the buffer's size is tried.
    if (Reservation::Reserve(*account_, Buffer{buffer.name, reused->bytes, 1}, &reused->charge)
            .ok()) {
      return Wrap(std::move(reused));
    }
    Give(reused.release());
  }
  // A new block: counted before it is allocated, so one that does not fit is
  // refused first.
  Reservation charge;
  RETURN_IF_ERROR(Reservation::Reserve(*account_, buffer, &charge));
  ASSIGN_OR_RETURN(std::unique_ptr<PoolBlock> block, Allocate(buffer));
  block->charge = std::move(charge);
  return Wrap(std::move(block));
}

BlockPool::Handle BlockPool::Wrap(std::unique_ptr<PoolBlock> block) {
  std::shared_ptr<BlockPool> self = shared_from_this();
  return Handle(block.release(), [self](PoolBlock* b) { self->Give(b); });
}

absl::StatusOr<std::unique_ptr<PoolBlock>> BlockPool::Allocate(const Buffer& buffer) {
  FitIdle(0);  // the new block is already counted
  auto block = std::make_unique<PoolBlock>();
  RETURN_IF_ERROR(memory_.allocate(buffer.bytes(), buffer.name, &block->data));
  block->bytes = buffer.bytes();
  return block;
}

void BlockPool::FitIdle(int64_t bytes) {
  // The largest idle blocks go first; the others keep their order (oldest
  // first: Give).
  std::vector<std::unique_ptr<PoolBlock>> freed;
  {
    absl::MutexLock lock(&mu_);
    while (!idle_.empty() && account_->in_use() + idle_bytes_ + bytes > account_->budget()) {
      auto largest = std::max_element(idle_.begin(), idle_.end(), [](const auto& a, const auto& b) {
        return a->bytes < b->bytes;
      });
      idle_bytes_ -= (*largest)->bytes;
      freed.push_back(std::move(*largest));
      idle_.erase(largest);
    }
  }
  Free(std::move(freed));
}

std::shared_ptr<const void> BlockPool::Share(Handle block) {
  PoolBlock* raw = block.release();
  raw->charge = Reservation();  // the chunks' pending bytes count it now
  std::shared_ptr<BlockPool> self = shared_from_this();
  return std::shared_ptr<const void>(
      raw, [self](const void* b) { self->Give(static_cast<PoolBlock*>(const_cast<void*>(b))); });
}

void BlockPool::Give(PoolBlock* given) {
  std::unique_ptr<PoolBlock> block(given);
  block->charge = Reservation();
  std::vector<std::unique_ptr<PoolBlock>> freed;
  {
    absl::MutexLock lock(&mu_);
    if (max_idle_ > 0 && account_->in_use() + idle_bytes_ + block->bytes <= account_->budget()) {
      // With max_idle_ waiting, the oldest gives way: a mix of job shapes
      // keeps the blocks of the shapes it uses now.
      if (idle_.size() >= max_idle_) {
        idle_bytes_ -= idle_.front()->bytes;
        freed.push_back(std::move(idle_.front()));
        idle_.erase(idle_.begin());
      }
      idle_bytes_ += block->bytes;
      idle_.push_back(std::move(block));
    } else {
      freed.push_back(std::move(block));
    }
  }
  Free(std::move(freed));
}

void BlockPool::Free(std::vector<std::unique_ptr<PoolBlock>> blocks) {
  for (std::unique_ptr<PoolBlock>& block : blocks) memory_.free(block->data);
}

size_t BlockPool::idle_blocks() const {
  absl::MutexLock lock(&mu_);
  return idle_.size();
}

int64_t BlockPool::idle_bytes() const {
  absl::MutexLock lock(&mu_);
  return idle_bytes_;
}

}  // namespace pricer
