// What one shard of a cuda job in flight uses: its streams, cuBLAS handle,
// device buffers and pinned staging buffers (CudaJobBuffers' per-shard
// entries) and events. A job keeps its slots for its next shards (the
// engine commits the per-shard entries once for each shard it runs here at
// once).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/backends/cuda/cuda_array.h"
#include "server/backends/cuda/cuda_device.h"
#include "server/backends/cuda/cuda_handles.h"
#include "server/scheduler/block_pool.h"
#include "server/model/job_spec.h"
#include "server/scheduler/memory_account.h"
#include "server/scheduler/shard_planner.h"

namespace pricer {

// The columns of A in one cuBLAS GEMM of a shard: the alignment of every
// shard, so a shard's blocks lie on one grid of the job's columns whatever
// its width or range.
inline constexpr int64_t kCudaGemmColumns = kColumnAlignment;

// A slot's streams and events, which outlive it in its GPU's StreamPool.
struct SlotStreams {
  // The GEMMs and kernels; A to the GPU; SC to the host: a GPU copies both
  // ways at once (Hopper has a copy engine each way), so the next shard's
  // upload does not queue behind this one's download.
  Stream compute, upload, download;
  std::vector<Event> a_ready, gemm_done;  // per 256-column block
  Event start, multiplied, reduced;       // timing
};

// The streams and events of a GPU's slots, kept for its next slots and jobs
// (at most kMaxIdle) rather than made and destroyed with each job's. A slot
// gives them back once its streams have drained.
class StreamPool {
 public:
  static constexpr size_t kMaxIdle = 8;

  StreamPool(int ordinal, std::string device) : ordinal_(ordinal), device_(std::move(device)) {}
  ~StreamPool();  // destroys the idle ones, on their GPU

  // Streams, and events for `blocks` blocks at least, on the current GPU
  // (this pool's).
  absl::StatusOr<SlotStreams> Take(int64_t blocks) ABSL_LOCKS_EXCLUDED(mu_);
  void Give(SlotStreams streams) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const int ordinal_;
  const std::string device_;
  absl::Mutex mu_;
  std::vector<SlotStreams> idle_ ABSL_GUARDED_BY(mu_);
};

struct ShardSlot : SlotStreams {
  ShardSlot() = default;
  ShardSlot(const ShardSlot&) = delete;
  ShardSlot& operator=(const ShardSlot&) = delete;
  // The streams and events back to `pool`.
  ~ShardSlot() {
    if (pool != nullptr) pool->Give(std::move(static_cast<SlotStreams&>(*this)));
  }

  std::shared_ptr<StreamPool> pool;
  CublasUse cublas;
  DeviceArray<float> a, sc;
  DeviceArray<double> statistics;  // rows x shard_columns, zeroed
  DeviceArray<float> sort_keys, sort_keys_alternate;
  DeviceArray<char> sort_scratch;
  DeviceArray<double> a_doubles, products;  // the moments shortcut's blocks
  BlockPool::Handle a_host;                // inline scenario columns, staged for H2D
  BlockPool::Handle statistics_host;       // the statistics block, from D2H
  // The contributions (CudaJobBuffers::Attribution's per-shard entries).
  DeviceArray<int32_t> band_paths;
  DeviceArray<float> attribution;
  DeviceArray<double> shares;
  BlockPool::Handle attribution_host;
};

// A slot for the shards (`shard_columns` wide at most) of a job on the
// current device `device`: its streams and events from the GPU's `streams`,
// its device buffers from `buffers` counted in `account`, its staging blocks
// from the GPU's `pinned` pool.
absl::StatusOr<std::unique_ptr<ShardSlot>> MakeShardSlot(const CudaJobBuffers& buffers,
                                                         int64_t shard_columns,
                                                         const std::string& device,
                                                         MemoryAccount& account, BlockPool& pinned,
                                                         std::shared_ptr<StreamPool> streams);

}  // namespace pricer
