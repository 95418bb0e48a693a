#include "server/backends/cpu/cpu_device.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/backends/cpu/column_reducer.h"
#include "server/backends/host/covariance_moments.h"
#include "server/model/counter_rng.h"
#include "server/model/gbm.h"
#include "server/model/statistic_errors.h"

namespace pricer {
namespace {

// Paths per block of the correlated shocks' GEMM.
constexpr int64_t kPathBlock = 256;
// Shocks between two polls of a job's stop: tens of ms on a core.
constexpr int64_t kShocksPerPoll = int64_t{1} << 22;
// Below this many shocks (about 0.2 ms on a core) ST is built on one thread.
constexpr int64_t kInlineShocks = int64_t{1} << 14;

// The flops of one GEMM between two polls of a shard's stop: 0.05-0.15 s on a
// core (OpenBLAS SGEMM at 32-90 GFLOP/s per core on the machines seen).
constexpr double kFlopsPerPoll = 5e9;

// The paths (rows of ST and SC) of each GEMM of a block of kColumnAlignment
// columns: all of them unless the block's GEMM is over kFlopsPerPoll
// (2 x 21,474 paths x 100,000 issuers x 256 columns is 1.1e12 flop, seconds
// on a core), then a multiple of 16 that keeps each under it. A function of
// P and N only, so the numbers do not depend on shard width, column range or
// device count (OpenBLAS's rounding depends on the GEMM's shape).
int64_t PathsPerGemm(int64_t paths, int64_t issuers) {
  constexpr double kColumns = kColumnAlignment;
  const double block_flops =
      2.0 * static_cast<double>(paths) * static_cast<double>(issuers) * kColumns;
  if (block_flops <= kFlopsPerPoll) return paths;
  const auto rows =
      static_cast<int64_t>(kFlopsPerPoll / (2.0 * static_cast<double>(issuers) * kColumns));
  return std::max<int64_t>(16, rows / 16 * 16);
}

// Once per process: every sgemm call runs on the calling thread.
void UseSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// Runs `body(team)` with a team sized for the tasks now running on `device`,
// at most `useful` threads: a tiny job runs on the calling worker alone,
// since waking a team costs more than it saves.
template <typename Body>
void WithTeam(CpuDevice& device, int64_t useful, Body body) {
  const int team = device.BeginTask();
  body(static_cast<int>(std::clamp<int64_t>(useful, 1, team)));
  device.EndTask();
}

// Polls StopStatus from the threads of a team, once per block: once one of
// them sees a reason to stop, the others skip their remaining blocks.
class StopPoll {
 public:
  explicit StopPoll(const JobSpec& spec) : spec_(spec) {}

  bool Stopped() {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    absl::Status why = StopStatus(spec_);
    if (why.ok()) return false;
    absl::MutexLock lock(&mu_);
    if (status_.ok()) status_ = std::move(why);
    stopped_ = true;
    return true;
  }
  absl::Status status() const {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  const JobSpec& spec_;
  std::atomic<bool> stopped_{false};
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

class CpuDeviceJob : public DeviceJob {
 public:
  CpuDeviceJob(const JobSpec& spec, CpuDevice& device, int64_t shard_columns)
      : spec_(spec),
        device_(device),
        memory_(device.memory()),
        buffers_(device.BuffersOf(spec, shard_columns)) {}

  // ST (P x N, column-major) from the shared counter-based shocks, correlated
  // through L when the job has a correlation matrix. A stopped job or a
  // passed deadline ends it within one block of paths or one issuer.
  absl::Status ComputeTerminalPrices() {
    RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory_, buffers_.st, &terminal_prices_));
    StopPoll stop(spec_);
    absl::Status status;
    // One thread below kInlineShocks (the tiny jobs of bench/load_bench).
    const int64_t shocks = spec_.paths * spec_.market.issuers();
    WithTeam(device_, shocks < kInlineShocks ? 1 : shocks, [&](int team) {
      if (!spec_.market.correlated()) {
        DrawShocks(team, stop);
      } else {
        status = CorrelatedShocks(team, stop);
      }
      if (status.ok()) ShocksToPrices(team, stop);
    });
    RETURN_IF_ERROR(status);
    RETURN_IF_ERROR(stop.status());
    if (!spec_.output.statistics.from_covariance) return absl::OkStatus();
    return CovarianceMoments::Of(spec_, terminal_prices_.data(), memory_, &moments_);
  }

  // Shocks of paths [first, first + rows) into a column-major block.
  void Shocks(int64_t first, int64_t rows, float* out, int64_t ld) const {
    const int64_t issuers = spec_.market.issuers();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t block = 0; block * 4 < issuers; ++block) {
        float z[4];
        PathShocks4(spec_.seed, static_cast<uint64_t>(first + r), static_cast<uint32_t>(block),
                    spec_.antithetic, z);
        for (int64_t m = 0; m < 4 && block * 4 + m < issuers; ++m) {
          out[(block * 4 + m) * ld + r] = z[m];
        }
      }
    }
  }

  // body(first, rows) for the blocks of `rows` paths, on the team; the
  // blocks after a stop are skipped.
  template <typename Body>
  void ForEachPathBlock(int team, int64_t rows, StopPoll& stop, Body body) const {
    const int64_t paths = spec_.paths;
    const int64_t blocks = (paths + rows - 1) / rows;
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
    for (int64_t b = 0; b < blocks; ++b) {
      if (stop.Stopped()) continue;
      body(b * rows, std::min(rows, paths - b * rows));
    }
  }

  // Independent shocks straight into ST, in blocks of at most kPathBlock
  // paths and kShocksPerPoll shocks (each shock depends on its path and
  // issuer only, so the blocks do not change the numbers).
  void DrawShocks(int team, StopPoll& stop) {
    const int64_t rows =
        std::clamp<int64_t>(kShocksPerPoll / spec_.market.issuers(), 16, kPathBlock);
    float* st = terminal_prices_.data();
    ForEachPathBlock(team, rows, stop, [&](int64_t first, int64_t count) {
      Shocks(first, count, st + first, spec_.paths);
    });
  }

  // x = L z for blocks of kPathBlock paths: one fixed-shape GEMM per block
  // (X = Z L^T), like the shard GEMMs, so rounding never depends on the
  // threads.
  absl::Status CorrelatedShocks(int team, StopPoll& stop) {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    AccountedArray<float> scratch;
    RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory_, buffers_.shock_blocks, &scratch));
    float* st = terminal_prices_.data();
    ForEachPathBlock(team, kPathBlock, stop, [&](int64_t first, int64_t rows) {
      float* z = scratch.data() + omp_get_thread_num() * kPathBlock * issuers;
      Shocks(first, rows, z, rows);
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows),
                  static_cast<blasint>(issuers), static_cast<blasint>(issuers), 1.0f, z,
                  static_cast<blasint>(rows), spec_.market.correlation_factor.data(),
                  static_cast<blasint>(issuers), 0.0f, st + first, static_cast<blasint>(paths));
    });
    return absl::OkStatus();
  }

  void ShocksToPrices(int team, StopPoll& stop) {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    const GbmConstants gbm = GbmConstantsOf(spec_.market);
    float* st = terminal_prices_.data();
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t i = 0; i < issuers; ++i) {
      if (stop.Stopped()) continue;
      for (int64_t p = 0; p < paths; ++p) {
        st[i * paths + p] =
            TerminalPrice(gbm.spot[i], gbm.drift[i], gbm.diffusion[i], st[i * paths + p]);
      }
    }
  }

  absl::Status RunShard(const Shard& shard, ShardOutput* out) override {
    if (spec_.output.statistics.from_covariance) {
      out->statistics.Resize(spec_.output.statistics, shard.out_end - shard.out_begin);
      const auto start = std::chrono::steady_clock::now();
      absl::Status status = moments_.ReduceShard(spec_, shard, memory_, &out->statistics);
      out->statistics_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return status;
    }
    ASSIGN_OR_RETURN(Buffers buffers, TakeBuffers());
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    const int64_t width = shard.gemm_end - shard.gemm_begin;
    const int64_t kept = shard.out_end - shard.out_begin;
    const StatisticsSelection& selection = spec_.output.statistics;
    if (selection.any()) out->statistics.Resize(selection, kept);
    if (spec_.output.full) out->values.resize(static_cast<size_t>(kept * paths));
    const double discount = std::exp(-spec_.market.rate * spec_.market.maturity);

    // One fixed-shape GEMM (or a fixed split of it) per aligned block of A, then the kept columns:
    // statistics while they are in cache, values copied out.
    constexpr int64_t kBlock = kColumnAlignment;
    const int64_t blocks = (width + kBlock - 1) / kBlock;
    double gemm_seconds = 0, statistics_seconds = 0;
    StopPoll stop(spec_);
    WithTeam(device_, blocks, [&](int team) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(team) \
    reduction(+ : gemm_seconds, statistics_seconds)
      for (int64_t b = 0; b < blocks; ++b) {
        if (stop.Stopped()) continue;
        const auto start = std::chrono::steady_clock::now();
        const int64_t first = b * kBlock;  // offset in the shard
        const int64_t count = std::min(kBlock, width - first);
        float* a = buffers.a.data() + first * issuers;
        spec_.scenarios.CopyColumns(shard.gemm_begin + first, count, a);
        // A block whose columns are all kept is multiplied straight into the output.
        const int64_t begin = shard.gemm_begin + first;
        float* sc = buffers.sc.data() + first * paths;
        if (spec_.output.full && begin >= shard.out_begin && begin + count <= shard.out_end) {
          sc = out->values.data() + (begin - shard.out_begin) * paths;
        }
        if (!MultiplyBlock(a, count, sc, stop)) continue;
        const auto multiplied = std::chrono::steady_clock::now();

        KeepBlock(shard, first, count, a, sc, discount, out);
        const auto reduced = std::chrono::steady_clock::now();
        gemm_seconds += std::chrono::duration<double>(multiplied - start).count();
        statistics_seconds += std::chrono::duration<double>(reduced - multiplied).count();
      }
    });
    out->gemm_seconds = gemm_seconds;
    out->statistics_seconds = statistics_seconds;
    ReturnBuffers(std::move(buffers));
    return stop.status();
  }

  absl::Status CopyTerminalPrices(int64_t issuer_begin, int64_t issuer_end, float* out) override {
    const int64_t paths = spec_.paths;
    std::memcpy(out, terminal_prices_.data() + issuer_begin * paths,
                static_cast<size_t>((issuer_end - issuer_begin) * paths) * sizeof(float));
    return absl::OkStatus();
  }

 private:
  // The A and SC blocks of one running shard. Sets are kept for the job's
  // next shards: the engine commits one per shard it runs here at once.
  struct Buffers {
    AccountedArray<float> a;
    AccountedArray<float> sc;
  };

  // SC = ST A for one block of `count` (<= kColumnAlignment) columns of A, in GEMMs of
  // PathsPerGemm rows each, polling `stop` between them; false when stopped.
  bool MultiplyBlock(const float* a, int64_t count, float* sc, StopPoll& stop) const {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    const int64_t step = PathsPerGemm(paths, issuers);
    for (int64_t first = 0; first < paths; first += step) {
      if (first > 0 && stop.Stopped()) return false;
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans,
                  static_cast<blasint>(std::min(step, paths - first)), static_cast<blasint>(count),
                  static_cast<blasint>(issuers), 1.0f, terminal_prices_.data() + first,
                  static_cast<blasint>(paths), a, static_cast<blasint>(issuers), 0.0f, sc + first,
                  static_cast<blasint>(paths));
    }
    return true;
  }

  // The kept columns of the block at `first` (`count` columns) of a shard,
  // whose positions are `a` and whose values are `sc`: their statistics while
  // they are in cache, their values copied out unless `sc` is the output.
  void KeepBlock(const Shard& shard, int64_t first, int64_t count, const float* a, const float* sc,
                 double discount, ShardOutput* out) const {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    const StatisticsSelection& selection = spec_.output.statistics;
    const int64_t block_begin = shard.gemm_begin + first;
    const int64_t column_begin = std::max(block_begin, shard.out_begin);
    const int64_t column_end = std::min(block_begin + count, shard.out_end);
    std::optional<ColumnReducer> reducer;
    std::optional<ColumnErrors> errors;
    std::vector<double> v0;
    if (selection.any()) {
      reducer.emplace(selection, paths, discount);
      if (selection.errors) errors.emplace(selection, paths, discount, spec_.antithetic);
      v0.resize(static_cast<size_t>(std::max<int64_t>(0, column_end - column_begin)));
      PortfolioValues(a + (column_begin - block_begin) * issuers, issuers, spec_.market.spot.data(),
                      static_cast<int64_t>(v0.size()), v0.data());
    }
    for (int64_t column = column_begin; column < column_end; ++column) {
      const float* values = sc + (column - block_begin) * paths;
      const int64_t k = column - shard.out_begin;  // index among the kept columns
      if (reducer.has_value()) {
        reducer->Reduce(values, v0[static_cast<size_t>(column - column_begin)], k,
                        &out->statistics);
        if (errors.has_value()) errors->Compute(values, k, &out->statistics);
      }
      if (spec_.output.full && out->values.data() + k * paths != values) {
        std::memcpy(out->values.data() + k * paths, values, paths * sizeof(float));
      }
    }
  }

  absl::StatusOr<Buffers> TakeBuffers() {
    {
      absl::MutexLock lock(&idle_mu_);
      if (!idle_.empty()) {
        Buffers buffers = std::move(idle_.back());
        idle_.pop_back();
        return buffers;
      }
    }
    Buffers buffers;
    RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory_, buffers_.a_block, &buffers.a));
    RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory_, buffers_.sc_block, &buffers.sc));
    return buffers;
  }

  void ReturnBuffers(Buffers buffers) {
    absl::MutexLock lock(&idle_mu_);
    idle_.push_back(std::move(buffers));
  }

  const JobSpec& spec_;
  CpuDevice& device_;
  MemoryAccount& memory_;
  const CpuJobBuffers buffers_;
  AccountedArray<float> terminal_prices_;
  CovarianceMoments moments_;  // of a job with StatisticsSelection::from_covariance
  absl::Mutex idle_mu_;
  std::vector<Buffers> idle_ ABSL_GUARDED_BY(idle_mu_);
};

}  // namespace

CpuDevice::CpuDevice(std::string name, int64_t budget_bytes, int threads)
    : Device(std::move(name), budget_bytes), threads_(std::max(1, threads)) {
  UseSingleThreadedBlas();
}

CpuJobBuffers CpuDevice::BuffersOf(const JobSpec& spec, int64_t shard_columns) const {
  const int64_t issuers = spec.market.issuers();
  CpuJobBuffers b;
  b.st = BufferOf<float>("terminal prices ST", spec.paths * issuers);
  if (spec.market.correlated()) {
    b.shock_blocks = BufferOf<float>("correlated shock blocks", threads_ * kPathBlock * issuers);
  }
  b.a_block = BufferOf<float>("scenario block A", issuers * shard_columns);
  b.sc_block = BufferOf<float>("result block SC", spec.paths * shard_columns);
  return b;
}

AllocationTable CpuDevice::Allocations(const JobSpec& spec, int64_t shard_columns) const {
  const CpuJobBuffers b = BuffersOf(spec, shard_columns);
  AllocationTable table{{b.st}, {b.a_block, b.sc_block}};
  if (spec.output.statistics.from_covariance) {  // no SC
    const auto m = CovarianceMoments::BuffersOf(spec.market.issuers());
    table = {{b.st, m.moments}, {m.a_block, m.a_doubles, m.products}};
  }
  if (spec.market.correlated()) table.resident.push_back(b.shock_blocks);
  return table;
}

absl::StatusOr<std::unique_ptr<DeviceJob>> CpuDevice::StartJob(const JobSpec& spec,
                                                               int64_t shard_columns) {
  auto job = std::make_unique<CpuDeviceJob>(spec, *this, shard_columns);
  RETURN_IF_ERROR(job->ComputeTerminalPrices());
  return job;
}

int CpuDevice::BeginTask() {
  const int running = ++running_;
  return std::max(1, threads_ / running);
}

void CpuDevice::EndTask() { --running_; }

}  // namespace pricer
