// One shard of a cuda job on one of its slots: A staged or drawn, a GEMM per
// 256-column block, the statistics of the kept columns, then the results
// copied out of the slot's pinned buffers.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "server/backends/cuda/cuda_shard_slot.h"
#include "server/backends/cuda/kernels.h"
#include "server/model/job_spec.h"
#include "server/scheduler/device.h"
#include "server/scheduler/shard_planner.h"

namespace pricer {

// The resident inputs of the contributions and sensitivities (device
// pointers; null where the job has none).
struct ResidentAttribution {
  const float* x = nullptr;  // X row-major
  const float* delta = nullptr;
  const float* vega = nullptr;
  const double* delta_today = nullptr;
  const double* vega_today = nullptr;
  const int32_t* issuer_offsets = nullptr;
  const int32_t* issuer_rows = nullptr;
};

// What a shard reads of its job: the spec and the job's resident buffers on
// the GPU (cuda_job.cc), all of them built before any shard runs.
struct ResidentJob {
  const JobSpec& spec;
  const std::string& device;      // its name, in errors
  int ordinal;                    // its GPU
  const CudaJobBuffers& buffers;  // its table's entries
  BlockPool& pinned;             // the GPU's pinned blocks
  int64_t shard_columns;          // the widest shard: the stride of the statistics block
  const float* x;                 // P x R: ST (R = N), or V with instruments (R = K)
  const double* today;            // R: X0, V0's weights (ValuesToday)
  const cuda::OrderLevel* levels;
  int64_t level_count;
  const int* sort_offsets;   // kSortColumns + 1, when the levels are sorted
  const double* covariance;  // S (R x R) then m (R): the moments shortcut's, else null
  RankSpan span;             // the ranks a window holds (WindowSpan), when there are levels
  double error_z;            // with errors: the normal quantile of their confidence
  ResidentAttribution attribution;
};

// Runs `shard` of `job` on `slot`, on the current GPU, into `out`. On
// failure the slot's streams have drained, and its buffers hold whatever
// the failed run left.
absl::Status RunShardOnSlot(const ResidentJob& job, const Shard& shard, ShardSlot& slot,
                            ShardOutput* out);

}  // namespace pricer
