#include "server/cpu/cpu_device.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "server/engine/counter_rng.h"
#include "server/engine/gbm.h"

namespace pricer {
namespace {

// Once per process: every sgemm call runs on the calling thread.
void UseSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

class CpuDeviceJob : public DeviceJob {
 public:
  CpuDeviceJob(const JobSpec& spec, MemoryAccount& memory, int threads)
      : spec_(spec), memory_(memory), threads_(threads) {}

  // ST (P x N, column-major) from the shared counter-based shocks.
  absl::Status ComputeTerminalPrices() {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    if (absl::Status s = AccountedArray<float>::Allocate(memory_, paths * issuers,
                                                         "terminal prices ST", &terminal_prices_);
        !s.ok()) {
      return s;
    }
    std::vector<float> spot(issuers), drift(issuers), diffusion(issuers);
    const double t = spec_.market.maturity;
    for (int64_t i = 0; i < issuers; ++i) {
      const double sigma = spec_.market.volatility[i];
      spot[i] = static_cast<float>(spec_.market.spot[i]);
      drift[i] = static_cast<float>((spec_.market.rate - 0.5 * sigma * sigma) * t);
      diffusion[i] = static_cast<float>(sigma * std::sqrt(t));
    }
    float* st = terminal_prices_.data();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t p = 0; p < paths; ++p) {
      for (int64_t block = 0; block * 4 < issuers; ++block) {
        float z[4];
        StandardNormals4(spec_.seed, static_cast<uint64_t>(p), static_cast<uint32_t>(block), z);
        for (int64_t m = 0; m < 4 && block * 4 + m < issuers; ++m) {
          const int64_t i = block * 4 + m;
          st[i * paths + p] = TerminalPrice(spot[i], drift[i], diffusion[i], z[m]);
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status RunShard(const Shard& shard, ShardOutput* out) override {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    const int64_t width = shard.gemm_end - shard.gemm_begin;
    // The A and SC blocks are kept for the job's next shard: one worker runs
    // this device's shards, and the planner's widths are fixed per job.
    if (a_block_.size() < issuers * width) {
      AccountedArray<float> a_block, sc_block;
      if (absl::Status s = AccountedArray<float>::Allocate(memory_, issuers * width,
                                                           "scenario block A", &a_block);
          !s.ok()) {
        return s;
      }
      if (absl::Status s =
              AccountedArray<float>::Allocate(memory_, paths * width, "result block SC", &sc_block);
          !s.ok()) {
        return s;
      }
      a_block_ = std::move(a_block);
      sc_block_ = std::move(sc_block);
    }
    const int64_t kept = shard.out_end - shard.out_begin;
    if (spec_.output.statistics) out->statistics.Resize(kept);
    if (spec_.output.full) out->values.resize(static_cast<size_t>(kept * paths));

    // One fixed-shape GEMM per 256-column block of A, then the block's kept
    // columns: statistics while they are in cache, values copied out.
    const int64_t blocks = (width + kColumnAlignment - 1) / kColumnAlignment;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * kColumnAlignment;  // offset in the shard
      const int64_t count = std::min(kColumnAlignment, width - first);
      float* a = a_block_.data() + first * issuers;
      float* sc = sc_block_.data() + first * paths;
      spec_.scenarios.CopyColumns(shard.gemm_begin + first, count, a);
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(paths),
                  static_cast<blasint>(count), static_cast<blasint>(issuers), 1.0f,
                  terminal_prices_.data(), static_cast<blasint>(paths), a,
                  static_cast<blasint>(issuers), 0.0f, sc, static_cast<blasint>(paths));
      const int64_t column_begin = std::max(shard.gemm_begin + first, shard.out_begin);
      const int64_t column_end = std::min(shard.gemm_begin + first + count, shard.out_end);
      for (int64_t column = column_begin; column < column_end; ++column) {
        const float* values = sc_block_.data() + (column - shard.gemm_begin) * paths;
        const int64_t k = column - shard.out_begin;  // index among the kept columns
        if (spec_.output.statistics) out->statistics.SetColumn(k, values, paths);
        if (spec_.output.full) std::memcpy(out->values.data() + k * paths, values, paths * 4);
      }
    }
    return absl::OkStatus();
  }

  absl::Status CopyTerminalPrices(int64_t issuer_begin, int64_t issuer_end, float* out) override {
    const int64_t paths = spec_.paths;
    std::memcpy(out, terminal_prices_.data() + issuer_begin * paths,
                static_cast<size_t>((issuer_end - issuer_begin) * paths) * sizeof(float));
    return absl::OkStatus();
  }

 private:
  const JobSpec& spec_;
  MemoryAccount& memory_;
  const int threads_;
  AccountedArray<float> terminal_prices_;
  AccountedArray<float> a_block_;
  AccountedArray<float> sc_block_;
};

}  // namespace

CpuDevice::CpuDevice(std::string name, int64_t budget_bytes, int threads)
    : Device(std::move(name), budget_bytes), threads_(std::max(1, threads)) {
  UseSingleThreadedBlas();
}

int64_t CpuDevice::JobBytes(const JobSpec& spec, int64_t shard_columns) const {
  const int64_t paths = spec.paths;
  const int64_t issuers = spec.market.issuers();
  return static_cast<int64_t>(sizeof(float)) *
         (paths * issuers + (issuers + paths) * shard_columns);
}

absl::StatusOr<std::unique_ptr<DeviceJob>> CpuDevice::StartJob(const JobSpec& spec) {
  auto job = std::make_unique<CpuDeviceJob>(spec, memory(), threads_);
  if (absl::Status s = job->ComputeTerminalPrices(); !s.ok()) return s;
  return job;
}

int64_t HostMemoryBytes() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
         static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace pricer
