#include "server/backends/cuda/pinned_pool.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/backends/cuda/scoped_device.h"

namespace pricer {

std::shared_ptr<PinnedPool> PinnedPool::Make(std::shared_ptr<MemoryAccount> account,
                                             BlockMemory memory) {
  return std::shared_ptr<PinnedPool>(new PinnedPool(std::move(account), std::move(memory)));
}

BlockMemory PinnedPool::CudaPinned(int ordinal, std::string device) {
  BlockMemory memory;
  memory.allocate = [device](int64_t bytes, absl::string_view what, void** out) {
    return CudaStatus(cudaHostAlloc(out, static_cast<size_t>(bytes), cudaHostAllocDefault),
                      "cudaHostAlloc", absl::StrCat(device, " (", what, ", ", bytes, " bytes)"));
  };
  memory.free = [ordinal, device](void* data) {
    ScopedDevice current(ordinal, device);
    cudaFreeHost(data);  // an error here was reported where it arose
  };
  return memory;
}

PinnedPool::~PinnedPool() {
  std::vector<std::unique_ptr<PinnedBlock>> idle;
  {
    absl::MutexLock lock(&mu_);
    idle.swap(idle_);
    idle_bytes_ = 0;
  }
  Free(std::move(idle));
}

absl::StatusOr<PinnedPool::Handle> PinnedPool::Take(const Buffer& buffer) {
  std::unique_ptr<PinnedBlock> reused;
  {
    absl::MutexLock lock(&mu_);
    // The smallest idle block that is large enough, and at most twice as
    // large (a shard's full-output block is not held as its statistics').
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      const int64_t bytes = (*it)->bytes;
      if (bytes >= buffer.bytes() && bytes <= 2 * buffer.bytes() &&
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
    // Counted at its own size, which may pass the buffer's.
    if (absl::Status s =
            Reservation::Reserve(*account_, Buffer{buffer.name, reused->bytes, 1}, &reused->charge);
        !s.ok()) {
      Give(reused.release());
      return s;
    }
    return Wrap(std::move(reused));
  }
  // A new block: counted before it is allocated, so one that does not fit is
  // refused first.
  Reservation charge;
  RETURN_IF_ERROR(Reservation::Reserve(*account_, buffer, &charge));
  ASSIGN_OR_RETURN(std::unique_ptr<PinnedBlock> block, Allocate(buffer));
  block->charge = std::move(charge);
  return Wrap(std::move(block));
}

PinnedPool::Handle PinnedPool::Wrap(std::unique_ptr<PinnedBlock> block) {
  std::shared_ptr<PinnedPool> self = shared_from_this();
  return Handle(block.release(), [self](PinnedBlock* b) { self->Give(b); });
}

absl::StatusOr<std::unique_ptr<PinnedBlock>> PinnedPool::Allocate(const Buffer& buffer) {
  const int64_t bytes = buffer.bytes();
  // Room in the budget for the new block (already counted) beside those in
  // use and the idle ones: the largest idle ones go first.
  std::vector<std::unique_ptr<PinnedBlock>> freed;
  {
    absl::MutexLock lock(&mu_);
    std::sort(idle_.begin(), idle_.end(),
              [](const auto& a, const auto& b) { return a->bytes < b->bytes; });
    while (!idle_.empty() && account_->in_use() + idle_bytes_ > account_->budget()) {
      idle_bytes_ -= idle_.back()->bytes;
      freed.push_back(std::move(idle_.back()));
      idle_.pop_back();
    }
  }
  Free(std::move(freed));
  auto block = std::make_unique<PinnedBlock>();
  RETURN_IF_ERROR(memory_.allocate(bytes, buffer.name, &block->data));
  block->bytes = bytes;
  return block;
}

std::shared_ptr<const void> PinnedPool::Share(Handle block) {
  PinnedBlock* raw = block.release();
  raw->charge = Reservation();  // the chunks' pending bytes count it now
  std::shared_ptr<PinnedPool> self = shared_from_this();
  return std::shared_ptr<const void>(
      raw, [self](const void* b) { self->Give(static_cast<PinnedBlock*>(const_cast<void*>(b))); });
}

void PinnedPool::Give(PinnedBlock* given) {
  std::unique_ptr<PinnedBlock> block(given);
  block->charge = Reservation();
  {
    absl::MutexLock lock(&mu_);
    if (idle_.size() < kMaxIdle &&
        account_->in_use() + idle_bytes_ + block->bytes <= account_->budget()) {
      idle_bytes_ += block->bytes;
      idle_.push_back(std::move(block));
      return;
    }
  }
  std::vector<std::unique_ptr<PinnedBlock>> freed;
  freed.push_back(std::move(block));
  Free(std::move(freed));
}

void PinnedPool::Free(std::vector<std::unique_ptr<PinnedBlock>> blocks) {
  for (std::unique_ptr<PinnedBlock>& block : blocks) memory_.free(block->data);
}

size_t PinnedPool::idle_blocks() const {
  absl::MutexLock lock(&mu_);
  return idle_.size();
}

int64_t PinnedPool::idle_bytes() const {
  absl::MutexLock lock(&mu_);
  return idle_bytes_;
}

}  // namespace pricer
