#include "server/backends/cuda/cuda_shard_run.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "server/backends/cuda/cuda_attribution.h"
#include "server/backends/cuda/cuda_device.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/model/statistics.h"

namespace pricer {
namespace {

cublasComputeType_t ComputeType(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::kTensorFloat32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmPrecision::kBFloat16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    case GemmPrecision::kFloat32:
      break;
  }
  return CUBLAS_COMPUTE_32F;
}

// Where a shard's columns lie in its slot's A and SC blocks.
struct ShardLayout {
  explicit ShardLayout(const Shard& shard)
      : first(shard.gemm_begin),
        width(shard.gemm_end - shard.gemm_begin),
        kept(shard.out_end - shard.out_begin),
        skip(shard.out_begin - shard.gemm_begin),
        blocks((width + kCudaGemmColumns - 1) / kCudaGemmColumns) {}

  // The first column of 256-column block `b` in the shard, and its width.
  int64_t BlockBegin(int64_t b) const { return b * kCudaGemmColumns; }
  int64_t BlockCount(int64_t b) const { return std::min(kCudaGemmColumns, width - BlockBegin(b)); }

  const int64_t first;   // the first column computed, in the job's matrix
  const int64_t width;   // columns computed
  const int64_t kept;    // columns kept
  const int64_t skip;    // columns computed before the kept ones
  const int64_t blocks;  // 256-column blocks of A
};

// One call of RunShardOnSlot, its steps in order.
class ShardRun {
 public:
  ShardRun(const ResidentJob& job, const Shard& shard, ShardSlot& slot)
      : job_(job), spec_(job.spec), name_(job.device), layout_(shard), slot_(slot) {}

  absl::Status Run(ShardOutput* out) {
    const absl::Status status = Steps(out);
    if (!status.ok()) {
      // Work may still be queued on the slot's streams, copies into the
      // full-output block among it: wait for it before the block goes back
      // to the pool with this run.
      cudaStreamSynchronize(slot_.compute.get());
      cudaStreamSynchronize(slot_.upload.get());
      cudaStreamSynchronize(slot_.download.get());
    }
    return status;
  }

 private:
  absl::Status Steps(ShardOutput* out) {
    RETURN_IF_ERROR(TakeValuesBlock(out));
    RETURN_IF_ERROR(StageScenarios());
    RETURN_IF_ERROR(MultiplyBlocks());
    RETURN_IF_ERROR(ReduceStatistics());
    RETURN_IF_ERROR(WaitAndTime(out));
    CopyOut(out);
    return absl::OkStatus();
  }

  // With full output: the pinned block SC is copied into and the chunks are
  // sent from. When the host's pinned memory is taken (chunks of slow
  // readers hold blocks), SC goes straight into the engine's pageable
  // buffer instead: each block's copy then waits for its GEMM.
  absl::Status TakeValuesBlock(ShardOutput* out) {
    if (!spec_.output.full) return absl::OkStatus();
    absl::StatusOr<BlockPool::Handle> block = job_.pinned.Take(*job_.buffers.values_host);
    if (block.ok()) {
      values_block_ = *std::move(block);
      values_ = values_block_->as<float>();
      return absl::OkStatus();
    }
    if (block.status().code() != absl::StatusCode::kResourceExhausted) return block.status();
    out->values.resize(static_cast<size_t>(layout_.kept * spec_.paths));
    values_ = out->values.data();
    return absl::OkStatus();
  }

  // A: drawn on the GPU, or staged through pinned memory and copied block
  // by block on the upload stream, each GEMM waiting for its block only.
  absl::Status StageScenarios() {
    const ScenarioMatrix& scenarios = spec_.scenarios;
    const int64_t positions = spec_.position_rows();
    if (scenarios.generated()) {
      return PRICER_CUDA_STATUS(
          name_, cuda::LaunchGenerateScenarios(scenarios.seed(), scenarios.value_min(),
                                               scenarios.value_max(), positions, layout_.first,
                                               layout_.width, slot_.a.data(), slot_.compute.get()));
    }
    float* a_host = slot_.a_host->as<float>();
    scenarios.CopyColumns(layout_.first, layout_.width, a_host);
    for (int64_t b = 0; b < layout_.blocks; ++b) {
      const int64_t offset = layout_.BlockBegin(b) * positions;
      RETURN_IF_ERROR(PRICER_CUDA_STATUS(
          name_,
          cudaMemcpyAsync(slot_.a.data() + offset, a_host + offset,
                          static_cast<size_t>(layout_.BlockCount(b) * positions) * sizeof(float),
                          cudaMemcpyHostToDevice, slot_.upload.get())));
      RETURN_IF_ERROR(
          PRICER_CUDA_STATUS(name_, cudaEventRecord(slot_.a_ready[b].get(), slot_.upload.get())));
    }
    return absl::OkStatus();
  }

  // One GEMM of fixed shape per 256-column block of A (kCudaGemmColumns),
  // so a column's value does not depend on the shard it falls in. The
  // kept columns of each block go to the host while the next ones run.
  absl::Status MultiplyBlocks() {
    const int paths = static_cast<int>(spec_.paths);
    const int positions = static_cast<int>(spec_.position_rows());
    cudaStream_t compute = slot_.compute.get();
    ASSIGN_OR_RETURN(cublasHandle_t cublas, slot_.cublas.Bind(job_.ordinal, name_, compute));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(name_, cudaEventRecord(slot_.start.get(), compute)));
    const float one = 1.0f, zero = 0.0f;
    for (int64_t b = 0; b < layout_.blocks; ++b) {
      RETURN_IF_ERROR(StopStatus(spec_));
      const int64_t first = layout_.BlockBegin(b);
      if (!spec_.scenarios.generated()) {
        RETURN_IF_ERROR(
            PRICER_CUDA_STATUS(name_, cudaStreamWaitEvent(compute, slot_.a_ready[b].get(), 0)));
      }
      if (job_.covariance != nullptr) {
        RETURN_IF_ERROR(MultiplyCovariance(cublas, b));
        continue;
      }
      RETURN_IF_ERROR(PRICER_CUBLAS_STATUS(
          name_, cublasGemmEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, paths,
                              static_cast<int>(layout_.BlockCount(b)), positions, &one, job_.x,
                              CUDA_R_32F, paths, slot_.a.data() + first * positions, CUDA_R_32F,
                              positions, &zero, slot_.sc.data() + first * paths, CUDA_R_32F, paths,
                              ComputeType(spec_.precision), CUBLAS_GEMM_DEFAULT)));
      if (spec_.output.full) RETURN_IF_ERROR(CopyKeptValues(b));
    }
    return PRICER_CUDA_STATUS(name_, cudaEventRecord(slot_.multiplied.get(), compute));
  }

  // The moments shortcut's GEMM of block `b`: its A in float64, then S A
  // (cuBLAS DGEMM, one fixed shape per block).
  absl::Status MultiplyCovariance(cublasHandle_t cublas, int64_t b) {
    const int64_t n = spec_.position_rows();
    const int64_t first = layout_.BlockBegin(b), count = layout_.BlockCount(b);
    double* a = slot_.a_doubles.data() + first * n;
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        name_,
        cuda::LaunchToDoubles(slot_.a.data() + first * n, count * n, a, slot_.compute.get())));
    const double one = 1.0, zero = 0.0;
    return PRICER_CUBLAS_STATUS(
        name_, cublasDgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n),
                           static_cast<int>(count), static_cast<int>(n), &one, job_.covariance,
                           static_cast<int>(n), a, static_cast<int>(n), &zero,
                           slot_.products.data() + first * n, static_cast<int>(n)));
  }

  // The kept columns of block `b` of SC to the host, after its GEMM, on the
  // download stream.
  absl::Status CopyKeptValues(int64_t b) {
    const int64_t paths = spec_.paths;
    cudaStream_t copy = slot_.download.get();
    RETURN_IF_ERROR(
        PRICER_CUDA_STATUS(name_, cudaEventRecord(slot_.gemm_done[b].get(), slot_.compute.get())));
    const int64_t begin = std::max(layout_.BlockBegin(b), layout_.skip);
    const int64_t end =
        std::min(layout_.BlockBegin(b) + layout_.BlockCount(b), layout_.skip + layout_.kept);
    if (begin >= end) return absl::OkStatus();
    RETURN_IF_ERROR(
        PRICER_CUDA_STATUS(name_, cudaStreamWaitEvent(copy, slot_.gemm_done[b].get(), 0)));
    return PRICER_CUDA_STATUS(
        name_,
        cudaMemcpyAsync(values_ + (begin - layout_.skip) * paths, slot_.sc.data() + begin * paths,
                        static_cast<size_t>((end - begin) * paths) * sizeof(float),
                        cudaMemcpyDeviceToHost, copy));
  }

  // The statistics of the kept columns next to the GEMMs: only they cross
  // PCIe in stats mode.
  absl::Status ReduceStatistics() {
    const StatisticsSelection& selection = spec_.output.statistics;
    cudaStream_t compute = slot_.compute.get();
    if (selection.any()) {
      const int64_t paths = spec_.paths;
      const int64_t positions = spec_.position_rows();
      const int64_t stride = job_.shard_columns;
      double* statistics = slot_.statistics.data();
      const float* kept_sc = slot_.sc.data() + layout_.skip * paths;
      RETURN_IF_ERROR(PRICER_CUDA_STATUS(
          name_, cuda::LaunchPortfolioValues(slot_.a.data() + layout_.skip * positions, positions,
                                             layout_.kept, job_.today, statistics, compute)));
      if (job_.covariance != nullptr) {
        const int64_t skip = layout_.skip * positions;
        RETURN_IF_ERROR(PRICER_CUDA_STATUS(
            name_, cuda::LaunchCovarianceMoments(
                       slot_.a_doubles.data() + skip, slot_.products.data() + skip,
                       job_.covariance + positions * positions, positions, layout_.kept, paths,
                       statistics, stride, compute)));
      } else if (selection.moments()) {
        RETURN_IF_ERROR(
            PRICER_CUDA_STATUS(name_, cuda::LaunchMoments(kept_sc, paths, layout_.kept,
                                                          statistics + stride, stride, compute)));
      }
      if (selection.errors && (selection.mean || selection.stddev)) {
        RETURN_IF_ERROR(PRICER_CUDA_STATUS(
            name_, cuda::LaunchMomentErrors(kept_sc, paths, layout_.kept, spec_.antithetic,
                                            statistics + stride, ErrorRow(0), stride, compute)));
      }
      RETURN_IF_ERROR(OrderStatistics(kept_sc, layout_.kept));
      RETURN_IF_ERROR(AttributeShard(job_, slot_, kept_sc,
                                     slot_.a.data() + layout_.skip * positions, layout_.kept,
                                     discount()));
      RETURN_IF_ERROR(PRICER_CUDA_STATUS(
          name_, cudaMemcpyAsync(slot_.statistics_host->as<double>(), statistics,
                                 static_cast<size_t>(StatisticRows() * stride) * sizeof(double),
                                 cudaMemcpyDeviceToHost, compute)));
    }
    return PRICER_CUDA_STATUS(name_, cudaEventRecord(slot_.reduced.get(), compute));
  }

  // The order statistics' rows of `kept` columns of SC from `kept_sc`: by
  // a window per column where it applies, else sorted kSortColumns at a
  // time.
  absl::Status OrderStatistics(const float* kept_sc, int64_t kept) {
    const int64_t paths = spec_.paths;
    const int64_t stride = job_.shard_columns;
    double* statistics = slot_.statistics.data();
    double* rows = statistics + CudaJobBuffers::kFixedStatisticRows * stride;
    cuda::ErrorArgs errors;
    if (spec_.output.statistics.errors) errors = {ErrorRow(2), job_.error_z, spec_.antithetic};
    if (!job_.buffers.sort) {  // the window serves the levels (WindowApplies)
      return PRICER_CUDA_STATUS(name_, cuda::LaunchWindowOrderStatistics(
                                           kept_sc, paths, kept, job_.span, job_.levels,
                                           static_cast<int>(job_.level_count), statistics,
                                           discount(), rows, stride, errors, slot_.compute.get()));
    }
    for (int64_t first = 0; first < kept && job_.level_count > 0; first += cuda::kSortColumns) {
      const int64_t count = std::min(cuda::kSortColumns, kept - first);
      const float* sorted = nullptr;
      RETURN_IF_ERROR(PRICER_CUDA_STATUS(
          name_, cuda::SortColumns(kept_sc + first * paths, paths, count, job_.sort_offsets,
                                   slot_.sort_keys.data(), slot_.sort_keys_alternate.data(),
                                   slot_.sort_scratch.data(), slot_.sort_scratch.size(), &sorted,
                                   slot_.compute.get())));
      cuda::ErrorArgs shifted = errors;  // column `first` of the rows
      if (shifted.out != nullptr) shifted.out += first;
      RETURN_IF_ERROR(PRICER_CUDA_STATUS(
          name_, cuda::LaunchOrderStatistics(sorted, kept_sc + first * paths, paths, count,
                                             job_.levels, static_cast<int>(job_.level_count),
                                             statistics + first, discount(), rows + first, stride,
                                             shifted, slot_.compute.get())));
    }
    return absl::OkStatus();
  }

  // Waits for `stream`'s work, polling it every 100 us and the job's stop
  // in between: a cancel or a deadline ends the wait (the slot is then
  // dropped once its queued work has drained, CudaJob::RunShard).
  absl::Status Wait(cudaStream_t stream) {
    for (;;) {
      const cudaError_t state = cudaStreamQuery(stream);
      if (state == cudaSuccess) return absl::OkStatus();
      if (state != cudaErrorNotReady) return PRICER_CUDA_STATUS(name_, state);
      // Not an error; should a runtime keep it as the thread's last error,
      // the next launch check would report it.
      if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
      RETURN_IF_ERROR(StopStatus(spec_));
      absl::SleepFor(absl::Microseconds(100));
    }
  }

  // Waits for the slot's streams; the GEMMs' and the statistics' times.
  absl::Status WaitAndTime(ShardOutput* out) {
    RETURN_IF_ERROR(Wait(slot_.compute.get()));
    RETURN_IF_ERROR(Wait(slot_.upload.get()));
    RETURN_IF_ERROR(Wait(slot_.download.get()));
    float gemm_ms = 0, statistics_ms = 0;
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        name_, cudaEventElapsedTime(&gemm_ms, slot_.start.get(), slot_.multiplied.get())));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        name_, cudaEventElapsedTime(&statistics_ms, slot_.multiplied.get(), slot_.reduced.get())));
    out->gemm_seconds = gemm_ms / 1000.0;
    out->statistics_seconds = statistics_ms / 1000.0;
    return absl::OkStatus();
  }

  // The kept values and statistics from the slot's pinned buffers.
  void CopyOut(ShardOutput* out) {
    const int64_t kept = layout_.kept;
    const StatisticsSelection& selection = spec_.output.statistics;
    if (values_block_ != nullptr) {
      // The chunks are sent from the block the GPU copied SC into.
      out->owned_values = SharedFloats(job_.pinned.Share(std::move(values_block_)), values_,
                                       static_cast<size_t>(kept * spec_.paths));
    }
    if (!selection.any()) return;
    out->statistics.Resize(selection, kept, spec_.position_rows(), spec_.market.issuers(),
                           out->contribution_buffers);
    CopyAttribution(job_, slot_, kept, out->statistics);
    const double* rows = slot_.statistics_host->as<double>();
    auto row = [&](int64_t r) { return rows + r * job_.shard_columns; };
    std::copy(row(0), row(0) + kept, out->statistics.v0.begin());
    if (selection.mean) std::copy(row(1), row(1) + kept, out->statistics.mean.begin());
    if (selection.stddev) std::copy(row(2), row(2) + kept, out->statistics.stddev.begin());
    if (selection.min) std::copy(row(3), row(3) + kept, out->statistics.min.begin());
    if (selection.max) std::copy(row(4), row(4) + kept, out->statistics.max.begin());
    int64_t r = CudaJobBuffers::kFixedStatisticRows;
    for (auto* levels : {&out->statistics.quantiles, &out->statistics.var, &out->statistics.es}) {
      for (std::vector<double>& level : *levels) {
        std::copy(row(r), row(r) + kept, level.begin());
        ++r;
      }
    }
    if (!selection.errors) return;
    // The errors' rows (ErrorRow): the mean's and stddev's, then two per
    // order level.
    const int64_t e = CudaJobBuffers::FirstErrorRow(selection);
    if (selection.mean) std::copy(row(e), row(e) + kept, out->statistics.mean_se.begin());
    if (selection.stddev)
      std::copy(row(e + 1), row(e + 1) + kept, out->statistics.stddev_se.begin());
    r = e + 2;
    auto bounds = [&](std::vector<std::vector<double>>& lower,
                      std::vector<std::vector<double>>& upper) {
      for (size_t l = 0; l < lower.size(); ++l, r += 2) {
        std::copy(row(r), row(r) + kept, lower[l].begin());
        std::copy(row(r + 1), row(r + 1) + kept, upper[l].begin());
      }
    };
    bounds(out->statistics.quantiles_lo, out->statistics.quantiles_hi);
    bounds(out->statistics.var_lo, out->statistics.var_hi);
    for (std::vector<double>& se : out->statistics.es_se) {
      std::copy(row(r), row(r) + kept, se.begin());
      r += 2;
    }
  }

  int64_t StatisticRows() const { return CudaJobBuffers::StatisticRows(spec_.output.statistics); }
  // Row `r` of the errors, after the fixed rows and the order levels'.
  double* ErrorRow(int64_t r) const {
    return slot_.statistics.data() +
           (CudaJobBuffers::FirstErrorRow(spec_.output.statistics) + r) * job_.shard_columns;
  }
  double discount() const { return std::exp(-spec_.market.rate * spec_.market.maturity); }

  const ResidentJob& job_;
  const JobSpec& spec_;
  const std::string& name_;
  const ShardLayout layout_;
  ShardSlot& slot_;
  BlockPool::Handle values_block_;  // full output, when pinned memory allowed
  float* values_ = nullptr;          // where SC's kept columns go on the host
};

}  // namespace

absl::Status RunShardOnSlot(const ResidentJob& job, const Shard& shard, ShardSlot& slot,
                            ShardOutput* out) {
  return ShardRun(job, shard, slot).Run(out);
}

}  // namespace pricer
