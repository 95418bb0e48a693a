#include "server/backends/cuda/cuda_shard_slot.h"

#include "common/status_macros.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/backends/cuda/scoped_device.h"
#include "server/scheduler/shard_planner.h"

namespace pricer {
namespace {

// The per-shard entries of `buffers`, on the GPU.
absl::Status AllocateDeviceBuffers(const std::string& device, MemoryAccount& account,
                                   const CudaJobBuffers& buffers, ShardSlot& slot) {
  auto allocate = [&](const Buffer& buffer, auto& array) {
    return AllocateOnDevice(account, buffer, device, &array);
  };
  RETURN_IF_ERROR(allocate(buffers.a_block, slot.a));
  RETURN_IF_ERROR(allocate(buffers.sc_block, slot.sc));
  if (buffers.statistics) {
    RETURN_IF_ERROR(allocate(*buffers.statistics, slot.statistics));
    // Rows of statistics not asked for are copied back too: keep them
    // defined. On the slot's compute stream, which is non-blocking: the
    // default stream's cudaMemset would not be ordered before its kernels.
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        device, cudaMemsetAsync(slot.statistics.data(), 0,
                                static_cast<size_t>(slot.statistics.size()) * sizeof(double),
                                slot.compute.get())));
  }
  if (const auto& c = buffers.covariance) {
    RETURN_IF_ERROR(allocate(c->a_doubles, slot.a_doubles));
    RETURN_IF_ERROR(allocate(c->products, slot.products));
  }
  if (const auto& t = buffers.attribution) {
    RETURN_IF_ERROR(allocate(t->band_paths, slot.band_paths));
    RETURN_IF_ERROR(allocate(t->results, slot.attribution));
    RETURN_IF_ERROR(allocate(t->shares, slot.shares));
  }
  if (const auto& sort = buffers.sort) {
    RETURN_IF_ERROR(allocate(sort->keys, slot.sort_keys));
    RETURN_IF_ERROR(allocate(sort->keys_alternate, slot.sort_keys_alternate));
    RETURN_IF_ERROR(allocate(sort->scratch, slot.sort_scratch));
  }
  return absl::OkStatus();
}

// Host staging from the GPU's pool (the full-output block is taken per
// shard: it leaves with the chunks).
absl::Status TakePinnedBlocks(BlockPool& pinned, const CudaJobBuffers& buffers, ShardSlot& slot) {
  if (const auto& b = buffers.statistics_host) {
    ASSIGN_OR_RETURN(slot.statistics_host, pinned.Take(*b));
  }
  if (const auto& b = buffers.a_host) {
    ASSIGN_OR_RETURN(slot.a_host, pinned.Take(*b));
  }
  if (const auto& t = buffers.attribution) {
    ASSIGN_OR_RETURN(slot.attribution_host, pinned.Take(t->results_host));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardSlot>> MakeShardSlot(const CudaJobBuffers& buffers,
                                                         int64_t shard_columns,
                                                         const std::string& device,
                                                         MemoryAccount& account, BlockPool& pinned,
                                                         std::shared_ptr<StreamPool> streams) {
  auto slot = std::make_unique<ShardSlot>();
  ASSIGN_OR_RETURN(static_cast<SlotStreams&>(*slot),
                   streams->Take((shard_columns + kCudaGemmColumns - 1) / kCudaGemmColumns));
  slot->pool = std::move(streams);
  RETURN_IF_ERROR(CountCublas(device, account, buffers.cublas, &slot->cublas));
  RETURN_IF_ERROR(AllocateDeviceBuffers(device, account, buffers, *slot));
  RETURN_IF_ERROR(TakePinnedBlocks(pinned, buffers, *slot));
  return slot;
}

StreamPool::~StreamPool() {
  if (idle_.empty()) return;
  ScopedDevice current(ordinal_, device_);
  idle_.clear();
}

absl::StatusOr<SlotStreams> StreamPool::Take(int64_t blocks) {
  SlotStreams streams;
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      streams = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (streams.compute == nullptr) {
    for (Stream* s : {&streams.compute, &streams.upload, &streams.download}) {
      RETURN_IF_ERROR(MakeStream(device_, s));
    }
    for (Event* e : {&streams.start, &streams.multiplied, &streams.reduced}) {
      RETURN_IF_ERROR(MakeEvent(device_, true, e));
    }
  }
  // Events for the blocks this slot has more of than the streams' last one.
  for (std::vector<Event>* events : {&streams.a_ready, &streams.gemm_done}) {
    while (static_cast<int64_t>(events->size()) < blocks) {
      events->emplace_back();
      RETURN_IF_ERROR(MakeEvent(device_, false, &events->back()));
    }
  }
  return streams;
}

void StreamPool::Give(SlotStreams streams) {
  if (streams.compute == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    if (idle_.size() < kMaxIdle) {
      idle_.push_back(std::move(streams));
      return;
    }
  }
  // Destroyed here, on the GPU the caller has current (the slot's).
}

}  // namespace pricer
