// The cuda backend: a device per GPU. Terminal prices, generated scenario
// columns, the shard GEMMs (cuBLAS) and the per-column statistics all run on
// the GPU; in stats mode only the statistics cross PCIe. Full output is copied
// into pinned host buffers on a copy stream while the next GEMMs run.
//
// Every CUDA and cuBLAS call is checked (server/backends/cuda/cuda_status.h): a failure
// fails that shard or job with a status naming the call and the device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/scheduler/device.h"

namespace pricer {

class CudaDevice : public Device {
 public:
  // Shards of one job in flight on a GPU: two, so that one shard's copies and
  // host-side work overlap the other's GEMMs, each on its own streams.
  static constexpr int64_t kShardSlots = 2;
  // The cuBLAS workspace of each handle (NVIDIA's recommendation for Hopper),
  // counted in the shard bytes.
  static constexpr int64_t kCublasWorkspaceBytes = 32 << 20;

  // Nothing touches GPU `ordinal` until a job starts, so a CudaDevice can be
  // made and sized on a host without one (its jobs then fail with
  // UNAVAILABLE).
  CudaDevice(std::string name, int ordinal, int64_t budget_bytes);

  std::string kind() const override { return "cuda"; }
  int ordinal() const { return ordinal_; }
  // ST (P x N float32), the per-issuer constants and the order-statistic
  // levels; for correlated issuers also L, the shocks Z and a cuBLAS
  // workspace while ST is built.
  int64_t ResidentBytes(const JobSpec& spec) const override;
  int64_t MaxShardsInFlight() const override { return kShardSlots; }
  // The A block (N x w) and SC block (P x w), the statistics (float64 per
  // selected value per column), a cuBLAS workspace, and when order
  // statistics are asked for two P x 256 sort buffers and the sort's scratch.
  int64_t ShardBytes(const JobSpec& spec, int64_t shard_columns) const override;
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
