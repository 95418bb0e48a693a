#include "server/backends/cuda/cuda_shard_slot.h"

#include "common/status_macros.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/scheduler/shard_planner.h"

namespace pricer {
namespace {

absl::Status MakeStreamsAndCublas(const std::string& device, MemoryAccount& account,
                                  const CudaJobBuffers& buffers, ShardSlot& slot) {
  RETURN_IF_ERROR(MakeStream(device, &slot.compute));
  RETURN_IF_ERROR(MakeStream(device, &slot.upload));
  RETURN_IF_ERROR(MakeStream(device, &slot.download));
  return CountCublas(device, account, buffers.cublas, &slot.cublas);
}

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
  if (const auto& sort = buffers.sort) {
    RETURN_IF_ERROR(allocate(sort->keys, slot.sort_keys));
    RETURN_IF_ERROR(allocate(sort->keys_alternate, slot.sort_keys_alternate));
    RETURN_IF_ERROR(allocate(sort->scratch, slot.sort_scratch));
  }
  return absl::OkStatus();
}

// Host staging from the GPU's pool (the full-output block is taken per
// shard: it leaves with the chunks).
absl::Status TakePinnedBlocks(PinnedPool& pinned, const CudaJobBuffers& buffers, ShardSlot& slot) {
  if (const auto& b = buffers.statistics_host) {
    ASSIGN_OR_RETURN(slot.statistics_host, pinned.Take(*b));
  }
  if (const auto& b = buffers.a_host) {
    ASSIGN_OR_RETURN(slot.a_host, pinned.Take(*b));
  }
  return absl::OkStatus();
}

absl::Status MakeEvents(const std::string& device, int64_t shard_columns, ShardSlot& slot) {
  const int64_t blocks = (shard_columns + kCudaGemmColumns - 1) / kCudaGemmColumns;
  slot.a_ready.resize(blocks);
  slot.gemm_done.resize(blocks);
  for (int64_t b = 0; b < blocks; ++b) {
    RETURN_IF_ERROR(MakeEvent(device, false, &slot.a_ready[b]));
    RETURN_IF_ERROR(MakeEvent(device, false, &slot.gemm_done[b]));
  }
  for (Event* e : {&slot.start, &slot.multiplied, &slot.reduced}) {
    RETURN_IF_ERROR(MakeEvent(device, true, e));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardSlot>> MakeShardSlot(const CudaJobBuffers& buffers,
                                                         int64_t shard_columns,
                                                         const std::string& device,
                                                         MemoryAccount& account,
                                                         PinnedPool& pinned) {
  auto slot = std::make_unique<ShardSlot>();
  RETURN_IF_ERROR(MakeStreamsAndCublas(device, account, buffers, *slot));
  RETURN_IF_ERROR(AllocateDeviceBuffers(device, account, buffers, *slot));
  RETURN_IF_ERROR(TakePinnedBlocks(pinned, buffers, *slot));
  RETURN_IF_ERROR(MakeEvents(device, shard_columns, *slot));
  return slot;
}

}  // namespace pricer
