// The cuda backend: a device per GPU. Terminal prices, generated scenario
// columns, the shard GEMMs (cuBLAS) and the per-column statistics all run on
// the GPU; in stats mode only the statistics cross PCIe. Full output is copied
// into pinned host buffers on a copy stream while the next GEMMs run.
//
// Every CUDA and cuBLAS call is checked (server/backends/cuda/cuda_status.h): a failure
// fails that shard or job with a status naming the call and the device.
//
// The device is here (cuda_device.cc), its jobs in cuda_job.cc and their
// shard slots in cuda_shard_slot.cc, finding GPUs in cuda_discovery.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "server/scheduler/device.h"

namespace pricer {

// What a cuda job allocates on its GPU, each buffer an entry of its
// AllocationTable (CudaDevice::Allocations) and allocated from it. Host
// staging buffers (pinned, bounded by the shard width) are not in it: the
// budget is the GPU's memory.
struct CudaJobBuffers {
  // Rows of the statistics block before the order statistics: V0, mean,
  // stddev, min, max (LaunchMoments writes the four after V0).
  static constexpr int64_t kFixedStatisticRows = 5;

  // Resident: ST (P x N float32), the spot in float64 (for V0), the order
  // statistics' levels (one at least: the table's minimum) and the segment
  // offsets of the sort.
  Buffer st, spot_f64, order_levels, sort_offsets;
  // Resident while ST is built (counted as resident): the GBM constants of
  // each issuer, float32.
  Buffer spot, drift, diffusion;
  // The same, for correlated issuers only: the shocks Z (P x N), the factor
  // L (N x N) and the workspace of the cuBLAS handle of the GEMM ST = Z L^T.
  struct Correlation {
    Buffer shocks, factor, cublas_workspace;
  };
  std::optional<Correlation> correlation;

  // Per shard w wide: the workspace of its cuBLAS handle, the A block
  // (N x w) and the SC block (P x w), float32.
  Buffer cublas_workspace, a_block, sc_block;
  // When statistics are asked for: their block, float64 (rows x w).
  std::optional<Buffer> statistics;
  // When order statistics are: the sort's two key buffers (P x 256 float32,
  // a cub::DoubleBuffer) and its scratch.
  struct Sort {
    Buffer keys, keys_alternate, scratch;
  };
  std::optional<Sort> sort;
};

class CudaDevice : public Device {
 public:
  // Shards of one job in flight on a GPU: two, so that one shard's copies and
  // host-side work overlap the other's GEMMs, each on its own streams.
  static constexpr int64_t kShardSlots = 2;
  // The cuBLAS workspace of each handle (NVIDIA's recommendation for Hopper).
  static constexpr int64_t kCublasWorkspaceBytes = 32 << 20;

  // Nothing touches GPU `ordinal` until a job starts, so a CudaDevice can be
  // made and sized on a host without one (its jobs then fail with
  // UNAVAILABLE).
  CudaDevice(std::string name, int ordinal, int64_t budget_bytes);

  std::string kind() const override { return "cuda"; }
  int ordinal() const { return ordinal_; }
  // The buffers of a job, named, as its DeviceJob allocates them.
  CudaJobBuffers BuffersOf(const JobSpec& spec, int64_t shard_columns) const;
  AllocationTable Allocations(const JobSpec& spec, int64_t shard_columns) const override;
  int64_t MaxShardsInFlight() const override { return kShardSlots; }
  absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec,
                                                      int64_t shard_columns) override;

 private:
  const int ordinal_;
};

// The GPUs this process can use, or UNAVAILABLE saying why there are none
// (no driver, no device).
absl::StatusOr<int> CudaDeviceCount();

// The device "cuda<ordinal>" with a budget of `bytes`, or when `bytes` is 0
// of `fraction` of the GPU's free memory now; either is capped at the free
// memory less kCudaHeadroomBytes (the CUDA context and the cuBLAS and CUB
// kernels need room the budget does not count).
inline constexpr int64_t kCudaHeadroomBytes = int64_t{512} << 20;
absl::StatusOr<std::unique_ptr<CudaDevice>> MakeCudaDevice(int ordinal, int64_t bytes,
                                                           double fraction);

}  // namespace pricer
