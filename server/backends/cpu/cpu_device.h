// The cpu backend: terminal prices on the host, shard GEMMs through OpenBLAS
// cblas_sgemm, statistics of each column block right after its GEMM.
//
// OpenBLAS runs single-threaded here; the device parallelises itself, one
// aligned block of kColumnAlignment columns per task on its own OpenMP team,
// each block one sgemm call of a shape the job fixes, which makes every
// result column independent of how the work is split (where the kernels
// give the same bits for a run of up to eight blocks in one call, a task
// takes such a run: gemm_width.h). It also lets K logical cpu devices share
// the cores without OpenBLAS's global thread pool serialising them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "server/scheduler/block_pool.h"
#include "server/scheduler/device.h"

namespace pricer {

// What a cpu job allocates (float32): resident, ST (P x N), with
// instruments their values V (P x K) and, for correlated issuers, one block
// of shocks per thread while ST is built; per shard, an A block (R x w, R
// = N or K) and an SC block (P x w).
struct CpuJobBuffers {
  Buffer st, values, shock_blocks;
  Buffer by_path;  // X row-major, for the contributions
  // For the sensitivities: dST/dsigma (P x N), and dX/dS0 and dX/dsigma
  // row-major (P x R).
  Buffer dst_dsigma, delta_by_path, vega_by_path;
  Buffer a_block, sc_block;
};

class CpuDevice : public Device {
 public:
  // `budget_bytes` bounds the host memory this device's jobs hold (ST, the
  // A block and the SC block of a running shard); `threads` (>= 1) is the
  // size of its team.
  CpuDevice(std::string name, int64_t budget_bytes, int threads);

  std::string kind() const override { return "cpu"; }
  std::string kernels() const override { return kernels_; }
  int threads() const { return threads_; }
  // The buffers of a job, named, as its DeviceJob allocates them.
  CpuJobBuffers BuffersOf(const JobSpec& spec, int64_t shard_columns) const;
  AllocationTable Allocations(const JobSpec& spec, int64_t shard_columns) const override;
  // One shard per thread: more would only oversubscribe the cores (measured:
  // the seed example at 100,000 scenarios on 2 cores, stats mode, 2 in flight
  // 17.96 s against 18.79 s with 4).
  int64_t MaxShardsInFlight() const override { return threads_; }
  absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec,
                                                      int64_t shard_columns) override;

  // The team for one more task: the device's threads shared by the tasks
  // running on it at once. Call EndTask when done.
  int BeginTask();
  void EndTask();

  // ST and the A and SC blocks of the shards running here, kept between
  // shards and jobs: a new one is faulted in and zeroed page by page.
  BlockPool& blocks() { return *blocks_; }
  int64_t idle_block_bytes() const override { return blocks_->idle_bytes(); }

 private:
  const int threads_;
  const std::string kernels_;  // BlasKernels(), which cannot change once OpenBLAS has loaded
  const std::shared_ptr<BlockPool> blocks_;
  std::atomic<int> running_{0};
};

}  // namespace pricer
