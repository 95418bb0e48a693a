// The moments shortcut (StatisticsSelection::from_covariance, docs/risk.md):
// the mean and standard deviation of every column of SC = ST A from ST's
// column means m and sample covariance S (divisor P - 1), in float64,
//   mean_j = m . A_j,   stddev_j = sqrt(A_j^T S A_j),
// the same sample moments as the column's P values give, without forming
// SC: 2 N^2 flops a column (one float64 GEMM S A per aligned block of A)
// instead of the shard GEMM's 2 P N, and S once per job (P N^2). The cpu
// backend runs all of it on the host (OpenBLAS); the cuda backend builds S
// and m here from its ST copied back once per job, then runs the blocks'
// GEMMs S A on the GPU (cuBLAS DGEMM, cuda_shard_run.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/model/job_spec.h"
#include "server/model/statistics.h"
#include "server/scheduler/allocation_table.h"
#include "server/scheduler/memory_account.h"
#include "server/scheduler/shard_planner.h"

namespace pricer {

class CovarianceMoments {
 public:
  // What a backend's AllocationTable holds for it (host memory): resident,
  // S and m (float64); per shard, a block of A in float32 and float64 and
  // the block of S A.
  struct Buffers {
    Buffer moments, a_block, a_doubles, products;
  };
  static Buffers BuffersOf(int64_t issuers);

  // m and S of X (P x R float32, column-major: spec's paths and
  // position_rows; ST, or the instruments' values V),
  // in a fixed order (blocks of paths, one thread), so the same ST gives the
  // same bits; counted in `memory`. Polls StopStatus(spec) between blocks.
  static absl::Status Of(const JobSpec& spec, const float* st, MemoryAccount& memory,
                         CovarianceMoments* out);

  // Sets v0 (from `today`, X0: ValuesToday), mean and stddev (as selected)
  // of `shard`'s kept columns, as columns 0, 1, ... of `out` (sized by the
  // caller): one float64 GEMM of a fixed shape per aligned block of
  // kColumnAlignment columns, so a column's bits do not depend on the shard. Its blocks are counted in `memory`.
  // Polls StopStatus between blocks.
  absl::Status ReduceShard(const JobSpec& spec, const Shard& shard, const double* today,
                           MemoryAccount& memory, ColumnStatistics* out) const;

  // S (N x N, column-major, both triangles) then m (N): what the cuda
  // backend uploads for its own GEMMs.
  const double* values() const { return values_.data(); }

 private:
  int64_t paths_ = 0, issuers_ = 0;  // issuers_: X's columns (N, or K instruments)
  AccountedArray<double> values_;    // S (N x N, both triangles), then m (N)
};

}  // namespace pricer
