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
#include "server/backends/cpu/blas_core.h"
#include "server/backends/cpu/column_attribution.h"
#include "server/backends/cpu/column_reducer.h"
#include "server/backends/cpu/cpu_paths.h"
#include "server/backends/cpu/cpu_team.h"
#include "server/backends/cpu/gemm_width.h"
#include "server/backends/host/covariance_moments.h"
#include "server/model/statistic_errors.h"

namespace pricer {
namespace {

// The flops of one block's GEMM between two polls of a shard's stop:
// 0.05-0.15 s on a core (OpenBLAS SGEMM at 32-90 GFLOP/s per core on AVX2
// machines). A wide call (gemm_width.h) takes up to 2e10, on kernels of
// 140+ GFLOP/s a core: 0.15 s too.
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

class CpuDeviceJob : public DeviceJob {
 public:
  CpuDeviceJob(const JobSpec& spec, CpuDevice& device, int64_t shard_columns)
      : spec_(spec),
        device_(device),
        memory_(device.memory()),
        buffers_(device.BuffersOf(spec, shard_columns)),
        discount_(std::exp(-spec.market.rate * spec.market.maturity)) {}

  // X and X0 (CpuPaths), and the moments shortcut's S and m of X.
  absl::Status ComputeTerminalPrices() {
    RETURN_IF_ERROR(paths_.Build(spec_, device_, buffers_, memory_));
    if (!spec_.output.statistics.from_covariance) return absl::OkStatus();
    return CovarianceMoments::Of(spec_, paths_.x(), memory_, &moments_);
  }

  absl::Status RunShard(const Shard& shard, ShardOutput* out) override {
    if (spec_.output.statistics.from_covariance) {
      out->statistics.Resize(spec_.output.statistics, shard.out_end - shard.out_begin);
      const auto start = std::chrono::steady_clock::now();
      absl::Status status =
          moments_.ReduceShard(spec_, shard, paths_.today().data(), memory_, &out->statistics);
      out->statistics_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return status;
    }
    ASSIGN_OR_RETURN(Buffers buffers, TakeBuffers(shard));
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.position_rows();
    const int64_t width = shard.gemm_end - shard.gemm_begin;
    const int64_t kept = shard.out_end - shard.out_begin;
    const StatisticsSelection& selection = spec_.output.statistics;
    if (selection.any()) {
      out->statistics.Resize(selection, kept, issuers, spec_.market.issuers(),
                             out->contribution_buffers);
    }
    if (spec_.output.full) out->values.resize(static_cast<size_t>(kept * paths));

    // Tasks of whole aligned blocks of A: one GEMM call (or a fixed split of
    // its rows) per block, or per run of up to GemmColumns's width where
    // OpenBLAS gives the same bits that way (gemm_width.h); then each block's
    // kept columns: statistics right after their GEMM, values copied out.
    constexpr int64_t kBlock = kColumnAlignment;
    const int64_t blocks = (width + kBlock - 1) / kBlock;
    const int64_t widest = GemmColumns(PathsPerGemm(paths, issuers), issuers) / kBlock;
    double gemm_seconds = 0, statistics_seconds = 0;
    StopPoll stop(spec_);
    WithTeam(device_, blocks, [&](int team) {
      // As wide as allowed, but a task for each thread of the team.
      const int64_t per_task = std::clamp<int64_t>((blocks + team - 1) / team, 1, widest);
      const int64_t tasks = (blocks + per_task - 1) / per_task;
#pragma omp parallel for schedule(dynamic, 1) num_threads(team) \
    reduction(+ : gemm_seconds, statistics_seconds)
      for (int64_t t = 0; t < tasks; ++t) {
        if (stop.Stopped()) continue;
        const int64_t first = t * per_task * kBlock;  // offset in the shard
        RunTask(shard, buffers, first, std::min(per_task * kBlock, width - first), out, stop,
                &gemm_seconds, &statistics_seconds);
      }
    });
    out->gemm_seconds = gemm_seconds;
    out->statistics_seconds = statistics_seconds;
    return stop.status();
  }

  absl::Status CopyPathColumns(const PathColumns& columns, float* out) override {
    const int64_t paths = spec_.paths;
    const float* from = columns.values ? paths_.x() : paths_.st();  // X is V with a book
    std::memcpy(out, from + columns.begin * paths,
                static_cast<size_t>((columns.end - columns.begin) * paths) * sizeof(float));
    return absl::OkStatus();
  }

 private:
  // The A and SC blocks of one running shard, from the device's pool, which
  // keeps them for the next shards and jobs (block_pool.h): the engine
  // commits one set per shard it runs here at once.
  struct Buffers {
    BlockPool::Handle a_block, sc_block;
    Reservation sc_reserved;  // the SC block's bytes, where the shard takes no block
    float* a() const { return a_block->as<float>(); }
    float* sc() const { return sc_block->as<float>(); }
  };

  // One task of RunShard: the `count` columns at `first` in the shard (whole
  // aligned blocks) multiplied in one call (or its fixed split of rows), then
  // each block's kept columns. Adds its seconds to the two sums.
  void RunTask(const Shard& shard, Buffers& buffers, int64_t first, int64_t count, ShardOutput* out,
               StopPoll& stop, double* gemm_seconds, double* statistics_seconds) const {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.position_rows();
    const auto start = std::chrono::steady_clock::now();
    float* a = buffers.a() + first * issuers;
    spec_.scenarios.CopyColumns(shard.gemm_begin + first, count, a);
    const int64_t begin = shard.gemm_begin + first;
    float* sc = IntoOutput(shard, begin, begin + count)
                    ? out->values.data() + (begin - shard.out_begin) * paths
                    : buffers.sc() + first * paths;
    if (!MultiplyColumns(a, count, sc, stop)) return;
    const auto multiplied = std::chrono::steady_clock::now();
    for (int64_t b = 0; b < count; b += kColumnAlignment) {
      KeepBlock(shard, first + b, std::min(kColumnAlignment, count - b), a + b * issuers,
                sc + b * paths, out, stop);
    }
    const auto reduced = std::chrono::steady_clock::now();
    *gemm_seconds += std::chrono::duration<double>(multiplied - start).count();
    *statistics_seconds += std::chrono::duration<double>(reduced - multiplied).count();
  }

  // SC = X A for `count` columns of A (aligned blocks, at most GemmColumns's
  // width), in GEMMs of PathsPerGemm rows each, polling `stop` between them;
  // false when stopped.
  bool MultiplyColumns(const float* a, int64_t count, float* sc, StopPoll& stop) const {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.position_rows();
    const int64_t step = PathsPerGemm(paths, issuers);
    for (int64_t first = 0; first < paths; first += step) {
      if (first > 0 && stop.Stopped()) return false;
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans,
                  static_cast<blasint>(std::min(step, paths - first)), static_cast<blasint>(count),
                  static_cast<blasint>(issuers), 1.0f, paths_.x() + first,
                  static_cast<blasint>(paths), a, static_cast<blasint>(issuers), 0.0f, sc + first,
                  static_cast<blasint>(paths));
    }
    return true;
  }

  // The kept columns of the block at `first` (`count` columns) of a shard,
  // whose positions are `a` and whose values are `sc`: their statistics (a
  // wide call's SC is past the cache by then: the column pass prefetches),
  // their values copied out unless `sc` is the output.
  // Polls `stop` every kColumnsPerPoll columns (a column's errors at 40,000
  // paths take milliseconds, a block's a second or more under a sanitizer):
  // a stopped shard's output is dropped.
  void KeepBlock(const Shard& shard, int64_t first, int64_t count, const float* a, const float* sc,
                 ShardOutput* out, StopPoll& stop) const {
    constexpr int64_t kColumnsPerPoll = 16;
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.position_rows();
    const StatisticsSelection& selection = spec_.output.statistics;
    const int64_t block_begin = shard.gemm_begin + first;
    const int64_t column_begin = std::max(block_begin, shard.out_begin);
    const int64_t column_end = std::min(block_begin + count, shard.out_end);
    std::optional<ColumnReducer> reducer;
    std::optional<ColumnErrors> errors;
    std::optional<ColumnAttribution> attribution;
    std::vector<double> v0;
    if (selection.any()) {
      reducer.emplace(selection, paths, discount_);
      if (selection.errors) errors.emplace(selection, paths, discount_, spec_.antithetic);
      if (selection.contribution_levels() > 0) attribution.emplace(selection, paths_.inputs());
      v0.resize(static_cast<size_t>(std::max<int64_t>(0, column_end - column_begin)));
      if (attribution.has_value()) attribution->Begin(static_cast<int64_t>(v0.size()));
      PortfolioValues(a + (column_begin - block_begin) * issuers, issuers, paths_.today().data(),
                      static_cast<int64_t>(v0.size()), v0.data());
    }
    for (int64_t column = column_begin; column < column_end; ++column) {
      if ((column - column_begin) % kColumnsPerPoll == kColumnsPerPoll - 1 && stop.Stopped()) {
        return;
      }
      const float* values = sc + (column - block_begin) * paths;
      const int64_t k = column - shard.out_begin;  // index among the kept columns
      if (reducer.has_value()) {
        reducer->Reduce(values, v0[static_cast<size_t>(column - column_begin)], k,
                        &out->statistics);
        if (errors.has_value()) errors->Compute(values, k, &out->statistics);
        if (attribution.has_value()) attribution->Select(column - column_begin, values, *reducer);
      }
      if (spec_.output.full && out->values.data() + k * paths != values) {
        std::memcpy(out->values.data() + k * paths, values, paths * sizeof(float));
      }
    }
    if (attribution.has_value()) {
      attribution->Finish(a + (column_begin - block_begin) * issuers,
                          column_begin - shard.out_begin, &out->statistics);
    }
  }

  // Whether the GEMM of columns [begin, end) of `shard` is multiplied
  // straight into the full output: every one of them is kept.
  bool IntoOutput(const Shard& shard, int64_t begin, int64_t end) const {
    return spec_.output.full && begin >= shard.out_begin && end <= shard.out_end;
  }

  // The blocks of `shard`. Where its GEMMs all write straight into the full
  // output (every column it computes is kept: RunTask), its SC block's bytes
  // are reserved as the engine committed them but no block is taken: it
  // would hold 4 P w bytes never written.
  absl::StatusOr<Buffers> TakeBuffers(const Shard& shard) {
    Buffers buffers;
    ASSIGN_OR_RETURN(buffers.a_block, device_.blocks().Take(buffers_.a_block));
    if (IntoOutput(shard, shard.gemm_begin, shard.gemm_end)) {
      device_.blocks().FitIdle(buffers_.sc_block.bytes());
      RETURN_IF_ERROR(Reservation::Reserve(memory_, buffers_.sc_block, &buffers.sc_reserved));
    } else {
      ASSIGN_OR_RETURN(buffers.sc_block, device_.blocks().Take(buffers_.sc_block));
    }
    return buffers;
  }

  const JobSpec& spec_;
  CpuDevice& device_;
  MemoryAccount& memory_;
  const CpuJobBuffers buffers_;
  const double discount_;  // exp(-r T)
  CpuPaths paths_;
  CovarianceMoments moments_;  // of a job with StatisticsSelection::from_covariance
};

}  // namespace

CpuDevice::CpuDevice(std::string name, int64_t budget_bytes, int threads)
    : Device(std::move(name), budget_bytes),
      threads_(std::max(1, threads)),
      kernels_(BlasKernels()),
      // The pool counts its blocks in this device's account, which outlives
      // them: they are given back before their job ends. It keeps the A and
      // SC blocks of as many shards as run here at once (one a thread) and
      // the ST of two jobs.
      blocks_(BlockPool::Make(std::shared_ptr<MemoryAccount>(std::shared_ptr<void>(), &memory()),
                              BlockPool::Host(), BlockPool::Reuse::kExactSize,
                              2 * static_cast<size_t>(threads_) + 2)) {
  UseSingleThreadedBlas();
}

CpuJobBuffers CpuDevice::BuffersOf(const JobSpec& spec, int64_t shard_columns) const {
  const int64_t issuers = spec.market.issuers();
  const int64_t rows = spec.position_rows();
  CpuJobBuffers b;
  b.st = BufferOf<float>("terminal prices ST", spec.paths * issuers);
  if (!spec.instruments.empty()) {
    b.values = BufferOf<float>("instrument values V", spec.paths * rows);
  }
  const StatisticsSelection& s = spec.output.statistics;
  if (s.contribution_levels() > 0) {
    b.by_path = BufferOf<float>("paths' rows of X (contributions)", spec.paths * rows);
    if (s.delta) b.delta_by_path = BufferOf<float>("paths' dX/dS0 (delta)", spec.paths * rows);
    if (s.vega) b.vega_by_path = BufferOf<float>("paths' dX/dsigma (vega)", spec.paths * rows);
    if (s.vega && !spec.historical()) {
      b.dst_dsigma = BufferOf<float>("dST/dsigma (vega)", spec.paths * issuers);
    }
  }
  if (spec.market.correlated()) {
    b.shock_blocks = BufferOf<float>("correlated shock blocks", threads_ * kPathBlock * issuers);
  }
  b.a_block = BufferOf<float>("scenario block A", rows * shard_columns);
  b.sc_block = BufferOf<float>("result block SC", spec.paths * shard_columns);
  return b;
}

AllocationTable CpuDevice::Allocations(const JobSpec& spec, int64_t shard_columns) const {
  const CpuJobBuffers b = BuffersOf(spec, shard_columns);
  AllocationTable table{{b.st}, {b.a_block, b.sc_block}};
  if (spec.output.statistics.from_covariance) {  // no SC
    const auto m = CovarianceMoments::BuffersOf(spec.position_rows());
    table = {{b.st, m.moments}, {m.a_block, m.a_doubles, m.products}};
  }
  if (spec.market.correlated()) table.resident.push_back(b.shock_blocks);
  if (!spec.instruments.empty()) table.resident.push_back(b.values);
  for (const Buffer& extra : {b.by_path, b.delta_by_path, b.vega_by_path, b.dst_dsigma}) {
    if (extra.elements > 0) table.resident.push_back(extra);
  }
  return table;
}

absl::StatusOr<std::unique_ptr<DeviceJob>> CpuDevice::StartJob(const JobSpec& spec,
                                                               int64_t shard_columns) {
  // What the job allocates outside the pool (AccountedArray): its resident
  // buffers but ST, and the moments shortcut's per-shard ones. Idle blocks
  // make room for them first.
  const AllocationTable table = Allocations(spec, shard_columns);
  int64_t outside = table.resident_bytes() - BuffersOf(spec, shard_columns).st.bytes();
  if (spec.output.statistics.from_covariance) outside += table.shard_bytes() * threads_;
  blocks_->FitIdle(outside);
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
