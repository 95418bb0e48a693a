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

#include "absl/status/statusor.h"
#include "server/backends/cuda/cuda_array.h"
#include "server/backends/cuda/cuda_device.h"
#include "server/backends/cuda/cuda_handles.h"
#include "server/backends/cuda/pinned_pool.h"
#include "server/model/job_spec.h"
#include "server/scheduler/memory_account.h"
#include "server/scheduler/shard_planner.h"

namespace pricer {

// The columns of A in one cuBLAS GEMM of a shard: the alignment of every
// shard, so a shard's blocks lie on one grid of the job's columns whatever
// its width or range.
inline constexpr int64_t kCudaGemmColumns = kColumnAlignment;

struct ShardSlot {
  // The GEMMs and kernels; A to the GPU; SC to the host: a GPU copies both
  // ways at once (Hopper has a copy engine each way), so the next shard's
  // upload does not queue behind this one's download.
  Stream compute, upload, download;
  CublasUse cublas;
  DeviceArray<float> a, sc;
  DeviceArray<double> statistics;  // rows x shard_columns, zeroed
  DeviceArray<float> sort_keys, sort_keys_alternate;
  DeviceArray<char> sort_scratch;
  PinnedPool::Handle a_host;              // inline scenario columns, staged for H2D
  PinnedPool::Handle statistics_host;     // the statistics block, from D2H
  std::vector<Event> a_ready, gemm_done;  // per 256-column block
  Event start, multiplied, reduced;       // timing
};

// A slot for the shards (`shard_columns` wide at most) of a job on the
// current device `device`, its device buffers from `buffers` counted in
// `account` and its staging blocks from the GPU's `pinned` pool.
absl::StatusOr<std::unique_ptr<ShardSlot>> MakeShardSlot(const CudaJobBuffers& buffers,
                                                         int64_t shard_columns,
                                                         const std::string& device,
                                                         MemoryAccount& account,
                                                         PinnedPool& pinned);

}  // namespace pricer
