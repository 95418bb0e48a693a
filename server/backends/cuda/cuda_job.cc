#include "server/backends/cuda/cuda_job.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/backends/cuda/cuda_array.h"
#include "server/backends/cuda/cuda_attribution.h"
#include "server/backends/cuda/cuda_handles.h"
#include "server/backends/cuda/cuda_shard_run.h"
#include "server/backends/cuda/cuda_shard_slot.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/backends/cuda/kernels.h"
#include "server/backends/cuda/scoped_device.h"
#include "server/backends/host/covariance_moments.h"
#include "server/model/gbm.h"
#include "server/model/interval_ranks.h"
#include "server/model/statistic_errors.h"
#include "server/model/statistics.h"

namespace pricer {
namespace {

// A job's state on its GPU. Its calls expect that GPU to be current
// (CudaDeviceJob makes it so), and RunShard may run on several threads at
// once.
class CudaJob {
 public:
  CudaJob(const JobSpec& spec, CudaDevice& device, int64_t shard_columns)
      : spec_(spec),
        name_(device.name()),
        ordinal_(device.ordinal()),
        memory_(device.memory()),
        pinned_(device.pinned_pool()),
        streams_(device.stream_pool()),
        shard_columns_(shard_columns),
        buffers_(device.BuffersOf(spec, shard_columns)),
        levels_host_(OrderLevels(spec.output.statistics, spec.paths)),
        span_(WindowSpan(spec.output.statistics, spec.paths, spec.antithetic)),
        error_z_(ColumnErrors::NormalQuantile(spec.output.statistics.error_confidence)) {}

  ~CudaJob() {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_.get());
  }

  // Builds ST (from the shocks or the historical returns), then V with
  // instruments. A stopped job (StopStatus) ends between the steps: each
  // step is one kernel or GEMM over at most the device's memory (by memory
  // bandwidth, tens of milliseconds on a current GPU; not measured), so a
  // cancel or a deadline waits about that long.
  absl::Status Start() {
    RETURN_IF_ERROR(StopStatus(spec_));
    absl::MutexLock lock(&stream_mu_);
    RETURN_IF_ERROR(MakeStream(name_, &stream_));
    cudaStream_t stream = stream_.get();
    // The float32 constants go when ST is built.
    DeviceArray<float> spot, drift, diffusion;
    const GbmConstants gbm = TerminalConstantsOf(spec_);
    RETURN_IF_ERROR(Upload(name_, memory_, buffers_.spot, gbm.spot, stream, &spot));
    RETURN_IF_ERROR(Upload(name_, memory_, buffers_.drift, gbm.drift, stream, &drift));
    RETURN_IF_ERROR(Upload(name_, memory_, buffers_.diffusion, gbm.diffusion, stream, &diffusion));
    RETURN_IF_ERROR(UploadStatisticsConstants(stream));
    RETURN_IF_ERROR(AllocateOnDevice(memory_, buffers_.st, name_, &st_));
    RETURN_IF_ERROR(StopStatus(spec_));
    RETURN_IF_ERROR(spec_.historical() ? UploadReturnsIntoSt(stream) : DrawShocksIntoSt(stream));
    RETURN_IF_ERROR(KeepShocks(spec_, buffers_, name_, memory_, st_.data(), stream, &attribution_));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(name_, cudaStreamSynchronize(stream)));
    RETURN_IF_ERROR(StopStatus(spec_));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        name_, cuda::LaunchTerminalPrices(spec_.paths, spec_.market.issuers(), spot.data(),
                                          drift.data(), diffusion.data(), st_.data(), stream)));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(name_, cudaStreamSynchronize(stream)));
    RETURN_IF_ERROR(StopStatus(spec_));
    RETURN_IF_ERROR(BuildInstrumentValues(stream));
    RETURN_IF_ERROR(
        BuildAttribution(spec_, buffers_, name_, memory_, st_.data(), x_, stream, &attribution_));
    if (!spec_.output.statistics.from_covariance) return absl::OkStatus();
    return UploadCovariance(stream);
  }

  absl::Status RunShard(const Shard& shard, ShardOutput* out) {
    ASSIGN_OR_RETURN(std::unique_ptr<ShardSlot> slot, TakeSlot());
    const absl::Status status = RunShardOnSlot(Resident(), shard, *slot, out);
    if (!status.ok()) {
      // Its streams drained (RunShardOnSlot): drop the slot rather than
      // reuse buffers in an unknown state.
      (void)cudaGetLastError();  // `status` already says what failed
      return status;
    }
    ReturnSlot(std::move(slot));
    return absl::OkStatus();
  }

  absl::Status CopyPathColumns(const PathColumns& columns, float* out) {
    const int64_t paths = spec_.paths;
    const float* from = columns.values ? x_ : st_.data();  // X is V with a book
    absl::MutexLock lock(&stream_mu_);
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        name_,
        cudaMemcpyAsync(out, from + columns.begin * paths,
                        static_cast<size_t>((columns.end - columns.begin) * paths) * sizeof(float),
                        cudaMemcpyDeviceToHost, stream_.get())));
    return PRICER_CUDA_STATUS(name_, cudaStreamSynchronize(stream_.get()));
  }

 private:
  // V0's weights X0, the order levels and the sort's segment offsets.
  absl::Status UploadStatisticsConstants(cudaStream_t stream) {
    RETURN_IF_ERROR(
        Upload(name_, memory_, buffers_.today_f64, ValuesToday(spec_), stream, &today_f64_));
    RETURN_IF_ERROR(Upload(name_, memory_, buffers_.order_levels, levels_host_, stream, &levels_));
    if (!buffers_.sort) return absl::OkStatus();
    RETURN_IF_ERROR(AllocateOnDevice(memory_, buffers_.sort->offsets, name_, &offsets_));
    return PRICER_CUDA_STATUS(name_,
                              cuda::LaunchSegmentOffsets(spec_.paths, offsets_.data(), stream));
  }

  // The historical returns R into ST (then ST = S0 exp(R) in place, with
  // TerminalConstantsOf's drift 0 and diffusion 1).
  absl::Status UploadReturnsIntoSt(cudaStream_t stream) {
    const std::vector<float>& returns = *spec_.returns->shared_values();
    // From pageable memory: staged before the call returns (see Upload).
    return PRICER_CUDA_STATUS(
        name_, cudaMemcpyAsync(st_.data(), returns.data(), returns.size() * sizeof(float),
                               cudaMemcpyHostToDevice, stream));
  }

  // With instruments, V from ST (their terms go when this returns); X is V,
  // else ST.
  absl::Status BuildInstrumentValues(cudaStream_t stream) {
    x_ = st_.data();
    if (!buffers_.book) return absl::OkStatus();
    DeviceArray<InstrumentTerms> terms;
    RETURN_IF_ERROR(Upload(name_, memory_, buffers_.book->terms,
                           TermsAtHorizon(spec_.market, spec_.instruments), stream, &terms));
    RETURN_IF_ERROR(AllocateOnDevice(memory_, buffers_.book->values, name_, &values_));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        name_, cuda::LaunchInstrumentValues(spec_.paths, spec_.position_rows(), terms.data(),
                                            st_.data(), values_.data(), stream)));
    x_ = values_.data();
    return PRICER_CUDA_STATUS(name_, cudaStreamSynchronize(stream));
  }

  // The shocks of every path into ST, correlated through L when the job
  // has a correlation matrix.
  absl::Status DrawShocksIntoSt(cudaStream_t stream) {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    if (!buffers_.correlation) {
      return PRICER_CUDA_STATUS(name_, cuda::LaunchShocks(spec_.seed, spec_.antithetic, paths,
                                                          issuers, st_.data(), stream));
    }
    // x = L z for every path: ST = Z L^T, one GEMM.
    const CudaJobBuffers::Correlation& buffers = *buffers_.correlation;
    DeviceArray<float> z, factor;
    CublasUse cublas;
    RETURN_IF_ERROR(AllocateOnDevice(memory_, buffers.shocks, name_, &z));
    RETURN_IF_ERROR(
        Upload(name_, memory_, buffers.factor, spec_.market.correlation_factor, stream, &factor));
    RETURN_IF_ERROR(CountCublas(name_, memory_, buffers.cublas, &cublas));
    ASSIGN_OR_RETURN(cublasHandle_t handle, cublas.Bind(ordinal_, name_, stream));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        name_, cuda::LaunchShocks(spec_.seed, spec_.antithetic, paths, issuers, z.data(), stream)));
    const float one = 1.0f, zero = 0.0f;
    const int p = static_cast<int>(paths), n = static_cast<int>(issuers);
    RETURN_IF_ERROR(PRICER_CUBLAS_STATUS(
        name_, cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, p, n, n, &one, z.data(), p,
                           factor.data(), n, &zero, st_.data(), p)));
    // Z, L and the workspace go when this returns: the GEMM first.
    return PRICER_CUDA_STATUS(name_, cudaStreamSynchronize(stream));
  }

  // The moments shortcut's S and m: on the host from this GPU's X (float64,
  // the code the cpu backend runs; its host memory is the start's only and
  // not the GPU's budget), then on the GPU for the shards' DGEMMs.
  absl::Status UploadCovariance(cudaStream_t stream) {
    std::vector<float> x(static_cast<size_t>(spec_.paths * spec_.position_rows()));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        name_,
        cudaMemcpyAsync(x.data(), x_, x.size() * sizeof(float), cudaMemcpyDeviceToHost, stream)));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(name_, cudaStreamSynchronize(stream)));
    MemoryAccount host(std::numeric_limits<int64_t>::max());
    CovarianceMoments moments;
    RETURN_IF_ERROR(CovarianceMoments::Of(spec_, x.data(), host, &moments));
    const Buffer& buffer = buffers_.covariance->moments;
    RETURN_IF_ERROR(AllocateOnDevice(memory_, buffer, name_, &covariance_));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        name_, cudaMemcpyAsync(covariance_.data(), moments.values(),
                               static_cast<size_t>(buffer.elements) * sizeof(double),
                               cudaMemcpyHostToDevice, stream)));
    return PRICER_CUDA_STATUS(name_, cudaStreamSynchronize(stream));
  }

  absl::StatusOr<std::unique_ptr<ShardSlot>> TakeSlot() {
    {
      absl::MutexLock lock(&idle_mu_);
      if (!idle_.empty()) {
        std::unique_ptr<ShardSlot> slot = std::move(idle_.back());
        idle_.pop_back();
        return slot;
      }
    }
    return MakeShardSlot(buffers_, shard_columns_, name_, memory_, pinned_, streams_);
  }

  void ReturnSlot(std::unique_ptr<ShardSlot> slot) {
    absl::MutexLock lock(&idle_mu_);
    idle_.push_back(std::move(slot));
  }

  // The job's resident state as its shards read it.
  ResidentJob Resident() const {
    return ResidentJob{spec_,
                       name_,
                       ordinal_,
                       buffers_,
                       pinned_,
                       shard_columns_,
                       x_,
                       today_f64_.data(),
                       levels_.data(),
                       static_cast<int64_t>(levels_host_.size()),
                       offsets_.data(),
                       covariance_.data(),
                       span_,
                       error_z_,
                       attribution_.Resident(spec_.position_rows())};
  }

  const JobSpec& spec_;
  const std::string name_;
  const int ordinal_;
  MemoryAccount& memory_;
  BlockPool& pinned_;                         // the GPU's, for the slots' staging and full output
  const std::shared_ptr<StreamPool> streams_;  // the GPU's, for the slots' streams
  const int64_t shard_columns_;
  const CudaJobBuffers buffers_;
  const std::vector<cuda::OrderLevel> levels_host_;
  const RankSpan span_;   // the ranks a window holds (WindowSpan)
  const double error_z_;  // the errors' normal quantile
  // Declared before the arrays: destroyed after them, and the destructor
  // synchronises it first.
  absl::Mutex stream_mu_;
  Stream stream_ ABSL_GUARDED_BY(stream_mu_);  // building ST, copying it out
  // Written by Start only, before any shard runs.
  DeviceArray<float> st_;
  DeviceArray<float> values_;  // V, with instruments
  const float* x_ = nullptr;   // the GEMMs' left operand: V or ST
  DeviceArray<double> today_f64_;
  DeviceArray<cuda::OrderLevel> levels_;
  DeviceArray<int> offsets_;
  DeviceArray<double> covariance_;  // the moments shortcut's S and m
  AttributionArrays attribution_;   // the contributions' and sensitivities'
  absl::Mutex idle_mu_;
  std::vector<std::unique_ptr<ShardSlot>> idle_ ABSL_GUARDED_BY(idle_mu_);
};

// The DeviceJob: makes the job's GPU current around each call into its
// state, and while that is destroyed.
class CudaDeviceJob : public DeviceJob {
 public:
  CudaDeviceJob(const JobSpec& spec, CudaDevice& device, int64_t shard_columns)
      : device_(device), job_(std::make_unique<CudaJob>(spec, device, shard_columns)) {}

  ~CudaDeviceJob() override {
    ScopedDevice current(device_.ordinal(), device_.name());
    job_.reset();
    ReleaseFreedMemory();
    (void)cudaGetLastError();  // what failed here was reported when it happened
  }

  absl::Status Start() {
    return OnDevice([&] { return job_->Start(); });
  }
  absl::Status RunShard(const Shard& shard, ShardOutput* out) override {
    return OnDevice([&] { return job_->RunShard(shard, out); });
  }
  absl::Status CopyPathColumns(const PathColumns& columns, float* out) override {
    return OnDevice([&] { return job_->CopyPathColumns(columns, out); });
  }

 private:
  template <typename Call>
  absl::Status OnDevice(Call call) {
    ScopedDevice current(device_.ordinal(), device_.name());
    RETURN_IF_ERROR(current.status());
    return call();
  }

  CudaDevice& device_;
  std::unique_ptr<CudaJob> job_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceJob>> StartCudaJob(const JobSpec& spec, CudaDevice& device,
                                                        int64_t shard_columns) {
  auto job = std::make_unique<CudaDeviceJob>(spec, device, shard_columns);
  RETURN_IF_ERROR(job->Start());
  return job;
}

std::vector<cuda::OrderLevel> OrderLevels(const StatisticsSelection& selection, int64_t paths) {
  std::vector<cuda::OrderLevel> levels;
  auto add = [&](double level, int kind) {
    const QuantileRank rank = QuantileRankOf(level, paths);
    levels.push_back(cuda::OrderLevel{rank.low, rank.fraction, kind, level});
  };
  for (double q : selection.quantiles) add(q, cuda::kQuantile);
  for (double a : selection.var) add(1.0 - a, cuda::kValueAtRisk);
  for (double a : selection.es) add(1.0 - a, cuda::kExpectedShortfall);
  return levels;
}

}  // namespace pricer
