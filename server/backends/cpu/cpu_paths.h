// A cpu job's resident paths: ST (P x N) from the counter-based shocks
// (correlated through L when the job has a correlation matrix) or from the
// historical returns, and with a book the instruments' values V (P x K).
// X, the shard GEMMs' left operand, is V with instruments, else ST.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/backends/cpu/column_attribution.h"
#include "server/backends/cpu/cpu_device.h"
#include "server/model/attribution.h"
#include "server/model/job_spec.h"
#include "server/scheduler/block_pool.h"
#include "server/scheduler/memory_account.h"

namespace pricer {

// Paths per block of the correlated shocks' GEMM (and per thread's block of
// shocks, CpuJobBuffers::shock_blocks).
inline constexpr int64_t kPathBlock = 256;

class StopPoll;

class CpuPaths {
 public:
  // Builds ST, then V, on teams of `device`, allocating from `buffers` in
  // `memory` (ST from the device's pool). A stopped job or a passed deadline ends it within one
  // block of paths, one issuer or one instrument.
  absl::Status Build(const JobSpec& spec, CpuDevice& device, const CpuJobBuffers& buffers,
                     MemoryAccount& memory);

  const float* st() const { return st_ ? StValues() : nullptr; }
  const float* x() const { return x_; }
  // What the contributions and sensitivities read (column_attribution.h).
  const AttributionInputs& inputs() const { return inputs_; }
  // X0 (ValuesToday): V0's weights.
  const std::vector<double>& today() const { return today_; }

 private:
  // Shocks of paths [first, first + rows) into a column-major block.
  void Shocks(const JobSpec& spec, int64_t first, int64_t rows, float* out, int64_t ld) const;
  void DrawShocks(const JobSpec& spec, int team, StopPoll& stop);
  absl::Status CorrelatedShocks(const JobSpec& spec, const CpuJobBuffers& buffers,
                                MemoryAccount& memory, int team, StopPoll& stop);
  void ShocksToPrices(const JobSpec& spec, int team, StopPoll& stop);
  absl::Status InstrumentValues(const JobSpec& spec, CpuDevice& device,
                                const CpuJobBuffers& buffers, MemoryAccount& memory);

  BlockPool::Handle st_;  // from the device's pool (block_pool.h), kept for its next jobs
  float* StValues() const { return st_->as<float>(); }
  // X row-major for the contributions' gather (a transpose of X, built last).
  absl::Status ByPath(const JobSpec& spec, const CpuJobBuffers& buffers, MemoryAccount& memory);
  // The sensitivities' per-path derivatives (attribution.h), row-major.
  absl::Status Derivatives(const JobSpec& spec, CpuDevice& device, const CpuJobBuffers& buffers,
                           MemoryAccount& memory);

  AccountedArray<float> values_;  // V, of a job with instruments
  AccountedArray<float> by_path_;
  AccountedArray<float> dst_dsigma_;  // P x N, under GBM with vega
  AccountedArray<float> delta_by_path_, vega_by_path_;
  RowDerivatives derivatives_today_;
  std::vector<int64_t> row_issuers_;
  AttributionInputs inputs_;
  const float* x_ = nullptr;
  std::vector<double> today_;
};

}  // namespace pricer
