// The DeviceJob of the cuda backend (cuda_device.h): ST and the job's
// constants on the GPU, and the shard slots its shards run on.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backends/cuda/cuda_device.h"
#include "server/backends/cuda/kernels.h"
#include "server/model/job_spec.h"
#include "server/model/statistics.h"
#include "server/scheduler/device.h"

namespace pricer {

// Builds the state of `spec` on `device` (CudaDevice::StartJob): ST is
// ready when this returns. `spec` and `device` outlive the job.
absl::StatusOr<std::unique_ptr<DeviceJob>> StartCudaJob(const JobSpec& spec, CudaDevice& device,
                                                        int64_t shard_columns);

// The order statistics of a selection over `paths` values, in the order of
// the statistics rows: quantiles, then VaR, then ES levels.
std::vector<cuda::OrderLevel> OrderLevels(const StatisticsSelection& selection, int64_t paths);

}  // namespace pricer
