// The cuda backend: a device per GPU. Terminal prices, generated scenario
// columns, the shard GEMMs (cuBLAS) and the per-column statistics all run on
// the GPU; in stats mode only the statistics cross PCIe. Full output is copied
// into pinned host buffers on a download stream while the next GEMMs run.
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
#include "server/scheduler/block_pool.h"
#include "server/scheduler/device.h"

namespace pricer {

// What a CudaDevice knows of its GPU: MakeCudaDevice reads and measures it
// when the device is made, before any job runs.
struct GpuProfile {
  // The compute capability, major * 10 + minor: 90 for Hopper (sm_90).
  int compute_capability = 0;
  // Device bytes one cuBLAS handle holds of its own, beyond the workspace
  // we give it (measured: a second handle made after the first).
  int64_t cublas_handle_bytes = 0;
  // Device bytes the process holds that no job's AllocationTable counts:
  // the CUDA context, and the cuBLAS and kernel modules loaded into it on
  // first use (measured: free memory before the context existed, less free
  // memory after a cuBLAS GEMM and one of our kernels ran, less what that
  // probe allocated itself). The budget is capped at free memory less this.
  int64_t context_headroom_bytes = 0;
  // Whether the free memory before the context was read (NVML); without it
  // the headroom leaves out the context's own bytes.
  bool context_measured = false;
  std::string model;  // the GPU's name, e.g. "NVIDIA H200"

  // The cuBLAS workspace of each handle, as the cuBLAS documentation
  // recommends for the architecture (cublasSetWorkspace): 32 MiB from
  // Hopper (sm_90) on, 4 MiB before it.
  int64_t cublas_workspace_bytes() const {
    return compute_capability >= 90 ? int64_t{32} << 20 : int64_t{4} << 20;
  }
};

// A device made without measuring a GPU (the sizing tests, on hosts without
// one): a Hopper, whose handles and context are taken to hold nothing the
// table does not count.
inline const GpuProfile kUnmeasuredHopper{90, 0, 0, false, ""};

// What a cuda job allocates on its GPU, each buffer an entry of its
// AllocationTable (CudaDevice::Allocations) and allocated from it, and the
// pinned host buffers its shards stage through (the table's
// pinned_per_shard, counted against the host's pinned memory).
struct CudaJobBuffers {
  // Rows of the statistics block before the order statistics: V0, mean,
  // stddev, min, max (LaunchMoments writes the four after V0).
  static constexpr int64_t kFixedStatisticRows = 5;
  // The rows of the statistics block: the fixed ones, one per order level,
  // and with errors (from FirstErrorRow) the mean's and stddev's standard
  // errors and two per order level (ErrorArgs, kernels.h).
  static int64_t FirstErrorRow(const StatisticsSelection& selection) {
    return kFixedStatisticRows + selection.order_levels();
  }
  static int64_t StatisticRows(const StatisticsSelection& selection) {
    return FirstErrorRow(selection) + (selection.errors ? 2 + 2 * selection.order_levels() : 0);
  }

  // What a cuBLAS handle holds on the GPU: the workspace we allocate for it
  // and its own state (GpuProfile::cublas_handle_bytes, reserved).
  struct Cublas {
    Buffer workspace, state;
  };

  // Resident: ST (P x N float32), X0 in float64 (spots or the instruments'
  // values today, V0's weights: R of them) and the order statistics' levels
  // (one at least: the table's minimum).
  Buffer st, today_f64, order_levels;
  // With instruments (resident): their values V (P x K float32), the GEMMs'
  // left operand, and their terms (K InstrumentTerms).
  struct Book {
    Buffer values, terms;
  };
  std::optional<Book> book;
  // Resident while ST is built (counted as resident): the GBM constants of
  // each issuer, float32.
  Buffer spot, drift, diffusion;
  // The same, for correlated issuers only: the shocks Z (P x N), the factor
  // L (N x N) and the cuBLAS handle of the GEMM ST = Z L^T.
  struct Correlation {
    Buffer shocks, factor;
    Cublas cublas;
  };
  std::optional<Correlation> correlation;

  // Per shard w wide: its cuBLAS handle, the A block (R x w) and the SC
  // block (P x w), float32.
  Cublas cublas;
  Buffer a_block, sc_block;
  // When statistics are asked for: their block, float64 (rows x w).
  std::optional<Buffer> statistics;
  // When order statistics are and the window kernel does not serve them
  // (WindowApplies to WindowSpan): the sort's segment offsets (resident),
  // and per shard its two key buffers (P x 256 float32, a
  // cub::DoubleBuffer) and its scratch.
  struct Sort {
    Buffer offsets, keys, keys_alternate, scratch;
  };
  std::optional<Sort> sort;
  // The moments shortcut (StatisticsSelection::from_covariance): X's
  // covariance S and column means m (resident, float64, R x R then R), and
  // per shard A and S A in float64 (R x w each). SC is then never formed
  // (its block is one float).
  struct Covariance {
    Buffer moments, a_doubles, products;
  };
  std::optional<Covariance> covariance;
  // The contributions and sensitivities (attribution_kernels.h). Resident:
  // X row-major (P x R); with delta (vega) dX/dS0 (dX/dsigma) row-major
  // (P x R); under GBM with vega dST/dsigma (P x N) and sigma_i T (N
  // doubles); the rows' terms (R), their derivatives today (2 R doubles),
  // the rows by issuer (N + 1 offsets, R rows) and the spots (N doubles).
  // Per shard: the bands' paths (int32, their sizes x w), the results
  // (float32, contribution_values_per_column x w), the rows' shares of a
  // sensitivity (R x w doubles); pinned, the results.
  struct Attribution {
    Buffer by_path, delta_by_path, vega_by_path, dst_dsigma, sigma_t, terms, today, issuer_offsets,
        issuer_rows, spot;
    Buffer band_paths, results, shares, results_host;
  };
  std::optional<Attribution> attribution;

  // Pinned host blocks per shard (BlockPool), each as large as the device
  // block it mirrors: the statistics block (when statistics are asked for),
  // the A block (inline scenarios) and the SC block (full output: the block
  // the chunks are sent from).
  std::optional<Buffer> statistics_host, a_host, values_host;
};

class StreamPool;  // cuda_shard_slot.h

class CudaDevice : public Device {
 public:
  // Shards of one job in flight on a GPU: two, so that one shard's copies and
  // host-side work overlap the other's GEMMs, each on its own streams.
  static constexpr int64_t kShardSlots = 2;

  // Nothing touches GPU `ordinal` until a job starts, so a CudaDevice can be
  // made and sized on a host without one (its jobs then fail with
  // UNAVAILABLE). Its jobs' pinned staging is allocated from
  // `pinned_memory`, the host's, which the engine admits shards against
  // (EngineOptions::pinned_memory).
  CudaDevice(std::string name, int ordinal, int64_t budget_bytes, const GpuProfile& gpu,
             std::shared_ptr<MemoryAccount> pinned_memory);

  std::string kind() const override { return "cuda"; }
  std::string kernels() const override;
  int64_t headroom_bytes() const override { return gpu_.context_headroom_bytes; }
  int64_t idle_block_bytes() const override { return pinned_pool_->idle_bytes(); }
  int ordinal() const { return ordinal_; }
  const GpuProfile& gpu() const { return gpu_; }
  MemoryAccount& pinned_memory() { return *pinned_memory_; }
  // The pinned blocks of this GPU's jobs, reused across shards and jobs.
  BlockPool& pinned_pool() { return *pinned_pool_; }
  // The streams and events of this GPU's slots, reused across jobs.
  const std::shared_ptr<StreamPool>& stream_pool() const { return stream_pool_; }
  // The buffers of a job, named, as its DeviceJob allocates them.
  CudaJobBuffers BuffersOf(const JobSpec& spec, int64_t shard_columns) const;
  AllocationTable Allocations(const JobSpec& spec, int64_t shard_columns) const override;
  int64_t MaxShardsInFlight() const override { return kShardSlots; }
  // 512 MiB: the example's 1,000,000 columns in 74 shards, not 559.
  int64_t StatisticsShardBytes() const override { return int64_t{512} << 20; }
  absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec,
                                                      int64_t shard_columns) override;

 private:
  const int ordinal_;
  const GpuProfile gpu_;
  const std::shared_ptr<MemoryAccount> pinned_memory_;
  const std::shared_ptr<BlockPool> pinned_pool_;
  const std::shared_ptr<StreamPool> stream_pool_;
};

// The GPUs this process can use, or UNAVAILABLE saying why there are none
// (no driver, no device).
absl::StatusOr<int> CudaDeviceCount();

// The device "cuda<ordinal>" with a budget of `bytes`, or when `bytes` is 0
// of `fraction` of the GPU's free memory before the process touched it;
// either is capped at that free memory less the measured context headroom
// (GpuProfile), which is logged. Its pinned staging comes from
// `pinned_memory`.
absl::StatusOr<std::unique_ptr<CudaDevice>> MakeCudaDevice(
    int ordinal, int64_t bytes, double fraction, std::shared_ptr<MemoryAccount> pinned_memory);

}  // namespace pricer
