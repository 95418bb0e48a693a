#include "server/cpu/cpu_device.h"

#include <cblas.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/engine/counter_rng.h"
#include "server/engine/gbm.h"

namespace pricer {
namespace {

class CpuDeviceJob : public DeviceJob {
 public:
  CpuDeviceJob(const JobSpec& spec, MemoryAccount& memory) : spec_(spec), memory_(memory) {}

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
      if (absl::Status s = AccountedArray<float>::Allocate(memory_, issuers * width,
                                                           "scenario block A", &a_block_);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = AccountedArray<float>::Allocate(memory_, paths * width,
                                                           "result block SC", &sc_block_);
          !s.ok()) {
        return s;
      }
    }
    float* a_block = a_block_.data();
    float* sc_block = sc_block_.data();
    spec_.scenarios.CopyColumns(shard.gemm_begin, width, a_block);
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(paths),
                static_cast<blasint>(width), static_cast<blasint>(issuers), 1.0f,
                terminal_prices_.data(), static_cast<blasint>(paths), a_block,
                static_cast<blasint>(issuers), 0.0f, sc_block, static_cast<blasint>(paths));

    const int64_t skip = shard.out_begin - shard.gemm_begin;
    const int64_t kept = shard.out_end - shard.out_begin;
    const float* first = sc_block + skip * paths;
    if (spec_.output.statistics) {
      out->statistics.Reserve(kept);
      for (int64_t j = 0; j < kept; ++j) out->statistics.AddColumn(first + j * paths, paths);
    }
    if (spec_.output.full) out->values.assign(first, first + kept * paths);
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
  AccountedArray<float> terminal_prices_;
  AccountedArray<float> a_block_;
  AccountedArray<float> sc_block_;
};

}  // namespace

CpuDevice::CpuDevice(std::string name, int64_t budget_bytes)
    : Device(std::move(name), budget_bytes) {}

absl::StatusOr<std::unique_ptr<DeviceJob>> CpuDevice::StartJob(const JobSpec& spec) {
  auto job = std::make_unique<CpuDeviceJob>(spec, memory());
  if (absl::Status s = job->ComputeTerminalPrices(); !s.ok()) return s;
  return job;
}

int64_t HostMemoryBytes() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace pricer
