#include "server/backends/cuda/cuda_device.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/backends/cuda/cuda_array.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/backends/cuda/kernels.h"
#include "server/model/statistics.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

// Rows of the statistics block before the order statistics: V0, mean,
// stddev, min, max (LaunchMoments writes the four after V0).
constexpr int64_t kFixedStatisticRows = 5;

struct StreamDeleter {
  void operator()(cudaStream_t stream) const { cudaStreamDestroy(stream); }
};
using Stream = std::unique_ptr<CUstream_st, StreamDeleter>;
struct EventDeleter {
  void operator()(cudaEvent_t event) const { cudaEventDestroy(event); }
};
using Event = std::unique_ptr<CUevent_st, EventDeleter>;
struct CublasDeleter {
  void operator()(cublasHandle_t handle) const { cublasDestroy(handle); }
};
using Cublas = std::unique_ptr<cublasContext, CublasDeleter>;

// `size` elements on the current GPU, counted in `account`, or pinned on the
// host (not counted).
template <typename T>
absl::Status AllocateOn(const std::string& device, MemoryAccount& account, int64_t size,
                        absl::string_view what, DeviceArray<T>* out) {
  return DeviceArray<T>::Allocate(account, size, what, out, CudaDeviceMemory{device});
}
template <typename T>
absl::Status AllocateOn(const std::string& device, MemoryAccount& /*account*/, int64_t size,
                        absl::string_view what, PinnedArray<T>* out) {
  return PinnedArray<T>::Allocate(size, what, device, out);
}

absl::Status MakeStream(const std::string& device, Stream* out) {
  cudaStream_t stream = nullptr;
  PRICER_CUDA_RETURN_IF_ERROR(device, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  out->reset(stream);
  return absl::OkStatus();
}

absl::Status MakeEvent(const std::string& device, bool timing, Event* out) {
  cudaEvent_t event = nullptr;
  PRICER_CUDA_RETURN_IF_ERROR(
      device, cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  out->reset(event);
  return absl::OkStatus();
}

// A cuBLAS handle on `stream` with its own accounted workspace.
absl::Status MakeCublas(const std::string& device, cudaStream_t stream, MemoryAccount& account,
                        Cublas* out, DeviceArray<char>* workspace) {
  cublasHandle_t handle = nullptr;
  PRICER_CUBLAS_RETURN_IF_ERROR(device, cublasCreate(&handle));
  out->reset(handle);
  PRICER_CUBLAS_RETURN_IF_ERROR(device, cublasSetStream(handle, stream));
  // After cublasSetStream, which resets the workspace to cuBLAS's own pool.
  if (absl::Status s = AllocateOn(device, account, CudaDevice::kCublasWorkspaceBytes,
                                  "cuBLAS workspace", workspace);
      !s.ok()) {
    return s;
  }
  PRICER_CUBLAS_RETURN_IF_ERROR(
      device, cublasSetWorkspace(handle, workspace->data(), CudaDevice::kCublasWorkspaceBytes));
  return absl::OkStatus();
}

template <typename T>
absl::Status Upload(const std::string& device, MemoryAccount& account, const std::vector<T>& host,
                    absl::string_view what, cudaStream_t stream, DeviceArray<T>* out) {
  if (absl::Status s = AllocateOn(device, account, static_cast<int64_t>(host.size()), what, out);
      !s.ok()) {
    return s;
  }
  if (host.empty()) return absl::OkStatus();
  PRICER_CUDA_RETURN_IF_ERROR(device,
                              cudaMemcpyAsync(out->data(), host.data(), host.size() * sizeof(T),
                                              cudaMemcpyHostToDevice, stream));
  // From pageable memory the call returns once `host` is staged, so it may go
  // away after this returns; no synchronisation is needed here.
  return absl::OkStatus();
}

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

// The order statistics of a selection, in the order of the statistics rows:
// quantiles, then VaR, then ES levels.
std::vector<cuda::OrderLevel> OrderLevels(const StatisticsSelection& selection, int64_t paths) {
  std::vector<cuda::OrderLevel> levels;
  auto add = [&](double level, int kind) {
    const QuantileRank rank = QuantileRankOf(level, paths);
    levels.push_back(cuda::OrderLevel{rank.low, rank.fraction, kind});
  };
  for (double q : selection.quantiles) add(q, cuda::kQuantile);
  for (double a : selection.var) add(1.0 - a, cuda::kValueAtRisk);
  for (double a : selection.es) add(1.0 - a, cuda::kExpectedShortfall);
  return levels;
}

class CudaDeviceJob : public DeviceJob {
 public:
  CudaDeviceJob(const JobSpec& spec, CudaDevice& device, int64_t shard_columns)
      : spec_(spec),
        device_(device),
        name_(device.name()),
        memory_(device.memory()),
        shard_columns_(shard_columns),
        levels_host_(OrderLevels(spec.output.statistics, spec.paths)) {}

  ~CudaDeviceJob() override {
    cudaSetDevice(device_.ordinal());
    if (stream_ != nullptr) cudaStreamSynchronize(stream_.get());
    (void)cudaGetLastError();  // what failed here was reported when it happened
  }

  absl::Status Start() {
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaSetDevice(device_.ordinal()));
    if (absl::Status s = MakeStream(name_, &stream_); !s.ok()) return s;
    cudaStream_t stream = stream_.get();
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    const GbmConstants gbm = GbmConstantsOf(spec_.market);
    DeviceArray<float> spot_f, drift_f, diffusion_f;
    for (auto [host, what, out] :
         {std::tuple{&gbm.spot, "spot", &spot_f}, std::tuple{&gbm.drift, "drift", &drift_f},
          std::tuple{&gbm.diffusion, "diffusion", &diffusion_f}}) {
      if (absl::Status s = Upload(name_, memory_, *host, what, stream, out); !s.ok()) return s;
    }
    if (absl::Status s =
            Upload(name_, memory_, spec_.market.spot, "spot (float64)", stream, &spot_);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = Upload(name_, memory_, levels_host_, "order levels", stream, &levels_);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            AllocateOn(name_, memory_, cuda::kSortColumns + 1, "sort offsets", &offsets_);
        !s.ok()) {
      return s;
    }
    PRICER_CUDA_RETURN_IF_ERROR(name_, cuda::LaunchSegmentOffsets(paths, offsets_.data(), stream));

    if (absl::Status s = AllocateOn(name_, memory_, paths * issuers, "terminal prices ST", &st_);
        !s.ok()) {
      return s;
    }
    if (!spec_.market.correlated()) {
      PRICER_CUDA_RETURN_IF_ERROR(name_, cuda::LaunchShocks(spec_.seed, spec_.antithetic, paths,
                                                            issuers, st_.data(), stream));
    } else {
      // x = L z for every path: ST = Z L^T, one GEMM.
      DeviceArray<float> z, factor;
      DeviceArray<char> workspace;
      Cublas cublas;
      if (absl::Status s = AllocateOn(name_, memory_, paths * issuers, "independent shocks Z", &z);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = Upload(name_, memory_, spec_.market.correlation_factor,
                                  "correlation factor L", stream, &factor);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = MakeCublas(name_, stream, memory_, &cublas, &workspace); !s.ok()) {
        return s;
      }
      PRICER_CUDA_RETURN_IF_ERROR(name_, cuda::LaunchShocks(spec_.seed, spec_.antithetic, paths,
                                                            issuers, z.data(), stream));
      const float one = 1.0f, zero = 0.0f;
      const int p = static_cast<int>(paths), n = static_cast<int>(issuers);
      PRICER_CUBLAS_RETURN_IF_ERROR(
          name_, cublasSgemm(cublas.get(), CUBLAS_OP_N, CUBLAS_OP_T, p, n, n, &one, z.data(), p,
                             factor.data(), n, &zero, st_.data(), p));
      // Z, L and the handle go at the end of this block: the GEMM first.
      PRICER_CUDA_RETURN_IF_ERROR(name_, cudaStreamSynchronize(stream));
    }
    PRICER_CUDA_RETURN_IF_ERROR(
        name_, cuda::LaunchTerminalPrices(paths, issuers, spot_f.data(), drift_f.data(),
                                          diffusion_f.data(), st_.data(), stream));
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaStreamSynchronize(stream));
    return absl::OkStatus();
  }

  absl::Status RunShard(const Shard& shard, ShardOutput* out) override {
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaSetDevice(device_.ordinal()));
    absl::StatusOr<std::unique_ptr<Slot>> taken = TakeSlot();
    if (!taken.ok()) return taken.status();
    std::unique_ptr<Slot> slot = *std::move(taken);
    absl::Status status = RunOnSlot(*slot, shard, out);
    if (!status.ok()) {
      // Work may still be queued on the slot's streams: wait for it, and
      // drop the slot rather than reuse buffers in an unknown state.
      cudaStreamSynchronize(slot->compute.get());
      cudaStreamSynchronize(slot->copy.get());
      (void)cudaGetLastError();  // `status` already says what failed
      return status;
    }
    ReturnSlot(std::move(slot));
    return absl::OkStatus();
  }

  absl::Status CopyTerminalPrices(int64_t issuer_begin, int64_t issuer_end, float* out) override {
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaSetDevice(device_.ordinal()));
    const int64_t paths = spec_.paths;
    std::lock_guard lock(stream_mu_);
    PRICER_CUDA_RETURN_IF_ERROR(
        name_,
        cudaMemcpyAsync(out, st_.data() + issuer_begin * paths,
                        static_cast<size_t>((issuer_end - issuer_begin) * paths) * sizeof(float),
                        cudaMemcpyDeviceToHost, stream_.get()));
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaStreamSynchronize(stream_.get()));
    return absl::OkStatus();
  }

 private:
  // What one shard in flight uses: its streams, cuBLAS handle and buffers.
  // A job keeps its slots for its next shards (the engine commits
  // ShardBytes for each shard it runs here at once).
  struct Slot {
    Stream compute, copy;
    DeviceArray<char> workspace;
    Cublas cublas;  // destroyed before its workspace
    DeviceArray<float> a, sc;
    DeviceArray<double> statistics;  // rows x shard_columns
    DeviceArray<float> sort0, sort1;
    DeviceArray<char> sort_scratch;
    PinnedArray<float> a_host;       // inline scenario columns, staged for H2D
    PinnedArray<float> values_host;  // full output, staged from D2H
    PinnedArray<double> statistics_host;
    std::vector<Event> a_ready, gemm_done;  // per 256-column block
    Event start, multiplied, reduced;       // timing
  };

  int64_t StatisticRows() const {
    return kFixedStatisticRows + static_cast<int64_t>(levels_host_.size());
  }

  absl::StatusOr<std::unique_ptr<Slot>> TakeSlot() {
    {
      std::lock_guard lock(idle_mu_);
      if (!idle_.empty()) {
        std::unique_ptr<Slot> slot = std::move(idle_.back());
        idle_.pop_back();
        return slot;
      }
    }
    auto slot = std::make_unique<Slot>();
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    const int64_t w = shard_columns_;
    const StatisticsSelection& selection = spec_.output.statistics;
    if (absl::Status s = MakeStream(name_, &slot->compute); !s.ok()) return s;
    if (absl::Status s = MakeStream(name_, &slot->copy); !s.ok()) return s;
    if (absl::Status s =
            MakeCublas(name_, slot->compute.get(), memory_, &slot->cublas, &slot->workspace);
        !s.ok()) {
      return s;
    }
    auto allocate = [&](auto& array, int64_t size, absl::string_view what) {
      return AllocateOn(name_, memory_, size, what, &array);
    };
    if (absl::Status s = allocate(slot->a, issuers * w, "scenario block A"); !s.ok()) return s;
    if (absl::Status s = allocate(slot->sc, paths * w, "result block SC"); !s.ok()) return s;
    if (selection.any()) {
      if (absl::Status s = allocate(slot->statistics, StatisticRows() * w, "statistics block");
          !s.ok()) {
        return s;
      }
      // Rows of statistics not asked for are copied back too: keep them
      // defined. On the slot's compute stream, which is non-blocking: the
      // default stream's cudaMemset would not be ordered before its kernels.
      PRICER_CUDA_RETURN_IF_ERROR(
          name_, cudaMemsetAsync(slot->statistics.data(), 0,
                                 static_cast<size_t>(StatisticRows() * w) * sizeof(double),
                                 slot->compute.get()));
      if (absl::Status s =
              allocate(slot->statistics_host, StatisticRows() * w, "pinned statistics block");
          !s.ok()) {
        return s;
      }
    }
    if (!levels_host_.empty()) {
      if (absl::Status s = allocate(slot->sort0, paths * cuda::kSortColumns, "sort buffer");
          !s.ok()) {
        return s;
      }
      if (absl::Status s = allocate(slot->sort1, paths * cuda::kSortColumns, "sort buffer");
          !s.ok()) {
        return s;
      }
      if (absl::Status s =
              allocate(slot->sort_scratch, cuda::SortScratchBytes(paths), "sort scratch");
          !s.ok()) {
        return s;
      }
    }
    if (!spec_.scenarios.generated()) {
      if (absl::Status s = allocate(slot->a_host, issuers * w, "pinned scenario block"); !s.ok()) {
        return s;
      }
    }
    if (spec_.output.full) {
      if (absl::Status s = allocate(slot->values_host, paths * w, "pinned result block"); !s.ok()) {
        return s;
      }
    }
    const int64_t blocks = (w + kColumnAlignment - 1) / kColumnAlignment;
    slot->a_ready.resize(blocks);
    slot->gemm_done.resize(blocks);
    for (int64_t b = 0; b < blocks; ++b) {
      if (absl::Status s = MakeEvent(name_, false, &slot->a_ready[b]); !s.ok()) return s;
      if (absl::Status s = MakeEvent(name_, false, &slot->gemm_done[b]); !s.ok()) return s;
    }
    for (Event* e : {&slot->start, &slot->multiplied, &slot->reduced}) {
      if (absl::Status s = MakeEvent(name_, true, e); !s.ok()) return s;
    }
    return slot;
  }

  void ReturnSlot(std::unique_ptr<Slot> slot) {
    std::lock_guard lock(idle_mu_);
    idle_.push_back(std::move(slot));
  }

  absl::Status RunOnSlot(Slot& slot, const Shard& shard, ShardOutput* out) {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    const int64_t width = shard.gemm_end - shard.gemm_begin;
    const int64_t kept = shard.out_end - shard.out_begin;
    const int64_t skip = shard.out_begin - shard.gemm_begin;  // columns computed, not kept
    const int64_t blocks = (width + kColumnAlignment - 1) / kColumnAlignment;
    const StatisticsSelection& selection = spec_.output.statistics;
    cudaStream_t compute = slot.compute.get();
    cudaStream_t copy = slot.copy.get();

    // A: drawn on the GPU, or staged through pinned memory and copied block
    // by block on the copy stream, each GEMM waiting for its block only.
    if (spec_.scenarios.generated()) {
      PRICER_CUDA_RETURN_IF_ERROR(
          name_, cuda::LaunchGenerateScenarios(spec_.scenarios.seed(), spec_.scenarios.value_min(),
                                               spec_.scenarios.value_max(), issuers,
                                               shard.gemm_begin, width, slot.a.data(), compute));
    } else {
      spec_.scenarios.CopyColumns(shard.gemm_begin, width, slot.a_host.data());
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t first = b * kColumnAlignment;
        const int64_t count = std::min(kColumnAlignment, width - first);
        PRICER_CUDA_RETURN_IF_ERROR(
            name_,
            cudaMemcpyAsync(slot.a.data() + first * issuers, slot.a_host.data() + first * issuers,
                            static_cast<size_t>(count * issuers) * sizeof(float),
                            cudaMemcpyHostToDevice, copy));
        PRICER_CUDA_RETURN_IF_ERROR(name_, cudaEventRecord(slot.a_ready[b].get(), copy));
      }
    }

    // One GEMM of fixed shape per 256-column block of A (kColumnAlignment),
    // so a column's value does not depend on the shard it falls in. The
    // kept columns of each block go to the host while the next ones run.
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaEventRecord(slot.start.get(), compute));
    const float one = 1.0f, zero = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * kColumnAlignment;
      const int64_t count = std::min(kColumnAlignment, width - first);
      if (!spec_.scenarios.generated()) {
        PRICER_CUDA_RETURN_IF_ERROR(name_, cudaStreamWaitEvent(compute, slot.a_ready[b].get(), 0));
      }
      PRICER_CUBLAS_RETURN_IF_ERROR(
          name_, cublasGemmEx(slot.cublas.get(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(paths),
                              static_cast<int>(count), static_cast<int>(issuers), &one, st_.data(),
                              CUDA_R_32F, static_cast<int>(paths), slot.a.data() + first * issuers,
                              CUDA_R_32F, static_cast<int>(issuers), &zero,
                              slot.sc.data() + first * paths, CUDA_R_32F, static_cast<int>(paths),
                              ComputeType(spec_.precision), CUBLAS_GEMM_DEFAULT));
      if (spec_.output.full) {
        PRICER_CUDA_RETURN_IF_ERROR(name_, cudaEventRecord(slot.gemm_done[b].get(), compute));
        const int64_t begin = std::max(first, skip);
        const int64_t end = std::min(first + count, skip + kept);
        if (begin < end) {
          PRICER_CUDA_RETURN_IF_ERROR(name_, cudaStreamWaitEvent(copy, slot.gemm_done[b].get(), 0));
          PRICER_CUDA_RETURN_IF_ERROR(
              name_, cudaMemcpyAsync(slot.values_host.data() + (begin - skip) * paths,
                                     slot.sc.data() + begin * paths,
                                     static_cast<size_t>((end - begin) * paths) * sizeof(float),
                                     cudaMemcpyDeviceToHost, copy));
        }
      }
    }
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaEventRecord(slot.multiplied.get(), compute));

    // The statistics of the kept columns next to the GEMMs: only they cross
    // PCIe in stats mode.
    const int64_t stride = shard_columns_;
    if (selection.any()) {
      double* statistics = slot.statistics.data();
      const float* kept_a = slot.a.data() + skip * issuers;
      const float* kept_sc = slot.sc.data() + skip * paths;
      PRICER_CUDA_RETURN_IF_ERROR(
          name_,
          cuda::LaunchPortfolioValues(kept_a, issuers, kept, spot_.data(), statistics, compute));
      if (selection.moments()) {
        PRICER_CUDA_RETURN_IF_ERROR(
            name_, cuda::LaunchMoments(kept_sc, paths, kept, statistics + stride, stride, compute));
      }
      for (int64_t first = 0; first < kept && !levels_host_.empty(); first += cuda::kSortColumns) {
        const int64_t count = std::min(cuda::kSortColumns, kept - first);
        const float* sorted = nullptr;
        PRICER_CUDA_RETURN_IF_ERROR(
            name_, cuda::SortColumns(kept_sc + first * paths, paths, count, offsets_.data(),
                                     slot.sort0.data(), slot.sort1.data(), slot.sort_scratch.data(),
                                     slot.sort_scratch.size(), &sorted, compute));
        PRICER_CUDA_RETURN_IF_ERROR(
            name_, cuda::LaunchOrderStatistics(
                       sorted, paths, count, levels_.data(), static_cast<int>(levels_host_.size()),
                       statistics + first, discount(),
                       statistics + kFixedStatisticRows * stride + first, stride, compute));
      }
      PRICER_CUDA_RETURN_IF_ERROR(
          name_, cudaMemcpyAsync(slot.statistics_host.data(), statistics,
                                 static_cast<size_t>(StatisticRows() * stride) * sizeof(double),
                                 cudaMemcpyDeviceToHost, compute));
    }
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaEventRecord(slot.reduced.get(), compute));
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaStreamSynchronize(compute));
    PRICER_CUDA_RETURN_IF_ERROR(name_, cudaStreamSynchronize(copy));

    float gemm_ms = 0, statistics_ms = 0;
    PRICER_CUDA_RETURN_IF_ERROR(
        name_, cudaEventElapsedTime(&gemm_ms, slot.start.get(), slot.multiplied.get()));
    PRICER_CUDA_RETURN_IF_ERROR(
        name_, cudaEventElapsedTime(&statistics_ms, slot.multiplied.get(), slot.reduced.get()));
    out->gemm_seconds = gemm_ms / 1000.0;
    out->statistics_seconds = statistics_ms / 1000.0;

    if (spec_.output.full) {
      out->values.assign(slot.values_host.data(), slot.values_host.data() + kept * paths);
    }
    if (selection.any()) {
      out->statistics.Resize(selection, kept);
      const double* rows = slot.statistics_host.data();
      auto row = [&](int64_t r) { return rows + r * stride; };
      std::copy(row(0), row(0) + kept, out->statistics.v0.begin());
      if (selection.mean) std::copy(row(1), row(1) + kept, out->statistics.mean.begin());
      if (selection.stddev) std::copy(row(2), row(2) + kept, out->statistics.stddev.begin());
      if (selection.min) std::copy(row(3), row(3) + kept, out->statistics.min.begin());
      if (selection.max) std::copy(row(4), row(4) + kept, out->statistics.max.begin());
      int64_t r = kFixedStatisticRows;
      for (auto* levels : {&out->statistics.quantiles, &out->statistics.var, &out->statistics.es}) {
        for (std::vector<double>& level : *levels) {
          std::copy(row(r), row(r) + kept, level.begin());
          ++r;
        }
      }
    }
    return absl::OkStatus();
  }

  double discount() const { return std::exp(-spec_.market.rate * spec_.market.maturity); }

  const JobSpec& spec_;
  CudaDevice& device_;
  const std::string name_;
  MemoryAccount& memory_;
  const int64_t shard_columns_;
  const std::vector<cuda::OrderLevel> levels_host_;
  // Declared before the arrays: destroyed after them, and the destructor
  // synchronises it first.
  Stream stream_;  // building ST, copying it out
  std::mutex stream_mu_;
  DeviceArray<float> st_;
  DeviceArray<double> spot_;
  DeviceArray<cuda::OrderLevel> levels_;
  DeviceArray<int> offsets_;
  std::mutex idle_mu_;
  std::vector<std::unique_ptr<Slot>> idle_;
};

}  // namespace

CudaDevice::CudaDevice(std::string name, int ordinal, int64_t budget_bytes)
    : Device(std::move(name), budget_bytes), ordinal_(ordinal) {}

int64_t CudaDevice::ResidentBytes(const JobSpec& spec) const {
  const int64_t paths = spec.paths;
  const int64_t issuers = spec.market.issuers();
  int64_t bytes = static_cast<int64_t>(sizeof(float)) * paths * issuers;  // ST
  bytes += (3 * static_cast<int64_t>(sizeof(float)) + 8) * issuers;       // constants, spot
  bytes += static_cast<int64_t>(sizeof(cuda::OrderLevel)) *
           std::max<int64_t>(1, spec.output.statistics.order_levels());
  bytes += static_cast<int64_t>(sizeof(int)) * (cuda::kSortColumns + 1);
  if (spec.market.correlated()) {
    bytes += static_cast<int64_t>(sizeof(float)) * (paths * issuers + issuers * issuers);
    bytes += kCublasWorkspaceBytes;
  }
  return bytes;
}

int64_t CudaDevice::ShardBytes(const JobSpec& spec, int64_t shard_columns) const {
  const int64_t paths = spec.paths;
  const int64_t w = shard_columns;
  const StatisticsSelection& selection = spec.output.statistics;
  int64_t bytes = static_cast<int64_t>(sizeof(float)) * (spec.market.issuers() + paths) * w;
  bytes += kCublasWorkspaceBytes;
  if (selection.any()) {
    bytes +=
        static_cast<int64_t>(sizeof(double)) * (kFixedStatisticRows + selection.order_levels()) * w;
  }
  if (selection.order_levels() > 0) {
    bytes += 2 * static_cast<int64_t>(sizeof(float)) * paths * cuda::kSortColumns;
    bytes += cuda::SortScratchBytes(paths);
  }
  return bytes;
}

absl::StatusOr<std::unique_ptr<DeviceJob>> CudaDevice::StartJob(const JobSpec& spec,
                                                                int64_t shard_columns) {
  auto job = std::make_unique<CudaDeviceJob>(spec, *this, shard_columns);
  if (absl::Status s = job->Start(); !s.ok()) return s;
  return job;
}

absl::StatusOr<int> CudaDeviceCount() {
  int count = 0;
  if (absl::Status s = CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount", "cuda");
      !s.ok()) {
    return s;
  }
  if (count == 0) return absl::UnavailableError("cuda: no CUDA device is visible");
  return count;
}

absl::StatusOr<std::unique_ptr<CudaDevice>> MakeCudaDevice(int ordinal, int64_t bytes,
                                                           double fraction) {
  const std::string name = absl::StrCat("cuda", ordinal);
  PRICER_CUDA_RETURN_IF_ERROR(name, cudaSetDevice(ordinal));
  size_t free = 0, total = 0;
  PRICER_CUDA_RETURN_IF_ERROR(name, cudaMemGetInfo(&free, &total));
  cudaDeviceProp properties{};
  PRICER_CUDA_RETURN_IF_ERROR(name, cudaGetDeviceProperties(&properties, ordinal));
  const int64_t usable = std::max<int64_t>(0, static_cast<int64_t>(free) - kCudaHeadroomBytes);
  int64_t budget = bytes > 0 ? bytes : static_cast<int64_t>(fraction * static_cast<double>(free));
  if (budget > usable) {
    spdlog::warn(
        "{}: --device-memory {} bytes is more than the GPU has free ({} less {} "
        "headroom); using {}",
        name, budget, free, kCudaHeadroomBytes, usable);
    budget = usable;
  }
  spdlog::info("{}: {} (sm_{}{}), {} MiB free of {} MiB, budget {} MiB", name, properties.name,
               properties.major, properties.minor, free >> 20, total >> 20, budget >> 20);
  return std::make_unique<CudaDevice>(name, ordinal, budget);
}

}  // namespace pricer
