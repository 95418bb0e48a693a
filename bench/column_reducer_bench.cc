// The per-column statistics against the GEMM that produces the column: how
// many microseconds one column of P = 10,000 paths costs for each selection,
// and (BM_GemmPerColumn) what one column of the cpu backend's GEMM costs on
// one thread: a 256-column block of SC = ST A with N = 500 issuers, 2 P N =
// 1e7 flops per column. The target: the stats mode's selection at most 5%
// of the GEMM's per-column time (issue 28; in the server, of its GEMM
// thread-seconds).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <optional>
#include <random>
#include <vector>

#include "server/backends/cpu/blas_core.h"
#include "server/backends/cpu/column_reducer.h"
#include "server/model/statistic_errors.h"

namespace pricer {
namespace {

constexpr int64_t kPaths = 10'000;
constexpr int64_t kColumns = 256;

std::vector<float> Columns() {
  std::mt19937 rng(1);
  std::lognormal_distribution<float> value(7.5f, 0.04f);
  std::vector<float> values(kPaths * kColumns);
  for (float& v : values) v = value(rng);
  return values;
}

void Reduce(benchmark::State& state, const StatisticsSelection& selection,
            ReducerKernel kernel = ReducerKernel::kBest) {
  const std::vector<float> values = Columns();
  ColumnStatistics out;
  out.Resize(selection, kColumns);
  ColumnReducer reducer(selection, kPaths, 0.98, kernel);
  std::optional<ColumnErrors> errors;
  if (selection.errors) errors.emplace(selection, kPaths, 0.98, /*antithetic=*/false);
  for (auto _ : state) {
    for (int64_t k = 0; k < kColumns; ++k) {
      reducer.Reduce(values.data() + k * kPaths, 1800, k, &out);
      if (errors.has_value()) errors->Compute(values.data() + k * kPaths, k, &out);
    }
    benchmark::DoNotOptimize(out.v0.data());
  }
  state.SetItemsProcessed(state.iterations() * kColumns);
  state.counters["us_per_column"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kColumns) * 1e-6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Basic(benchmark::State& state) { Reduce(state, StatisticsSelection::Basic()); }

void BM_VarEs(benchmark::State& state) {
  StatisticsSelection s;
  s.mean = s.stddev = true;
  s.var = {0.99, 0.975};
  s.es = {0.99, 0.975};
  Reduce(state, s);
}

// What the benchmarks and a risk system ask for: mean,stddev,var:0.99,es:0.975.
StatisticsSelection StatsMode() {
  StatisticsSelection s;
  s.mean = s.stddev = true;
  s.var = {0.99};
  s.es = {0.975};
  return s;
}

void BM_StatsMode(benchmark::State& state) { Reduce(state, StatsMode()); }
void BM_StatsModePortable(benchmark::State& state) {
  Reduce(state, StatsMode(), ReducerKernel::kPortable);
}
// The pass's AVX2 and AVX-512 code, each where the processor has it (BM_StatsMode
// takes the best).
void BM_StatsModeAvx2(benchmark::State& state) { Reduce(state, StatsMode(), ReducerKernel::kAvx2); }
void BM_StatsModeAvx512(benchmark::State& state) {
  Reduce(state, StatsMode(), ReducerKernel::kAvx512);
}
// The same with the Monte Carlo error of each statistic (statistic_errors.h).
void BM_StatsModeErrors(benchmark::State& state) {
  StatisticsSelection s = StatsMode();
  s.errors = true;
  Reduce(state, s);
}

void BM_GemmPerColumn(benchmark::State& state) {
  constexpr int64_t kIssuers = 500;
  openblas_set_num_threads(1);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  std::vector<float> st(kPaths * kIssuers), a(kIssuers * kColumns), sc(kPaths * kColumns);
  for (float& v : st) v = value(rng);
  for (float& v : a) v = value(rng);
  for (auto _ : state) {
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, kPaths, kColumns, kIssuers, 1.0f,
                st.data(), kPaths, a.data(), kIssuers, 0.0f, sc.data(), kPaths);
    benchmark::DoNotOptimize(sc.data());
  }
  state.counters["us_per_column"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kColumns) * 1e-6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["GFLOPs"] = benchmark::Counter(
      2.0 * kPaths * kIssuers * kColumns * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

// The stats mode as the server runs it: each column reduced right after
// one sgemm (beta = 0, one thread) wrote a block of range(0) columns, up to
// a wide call's 2048 in the server (80 MB at P = 10,000); only the
// reduction is timed (us_per_column), the GEMM beside it (gemm_us_per_column).
// Against BM_StatsMode (columns long since written): what the GEMM's writes
// cost the pass that reads them, and what a narrower call (whose SC is
// still in cache) costs the GEMM, which packs ST again on every call.
void BM_StatsModeAfterGemm(benchmark::State& state) {
  constexpr int64_t kIssuers = 500;
  const int64_t columns = state.range(0);
  openblas_set_num_threads(1);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(0.9f, 1.1f);
  std::vector<float> st(kPaths * kIssuers), a(kIssuers * columns), sc(kPaths * columns);
  for (float& v : st) v = 3.6f * value(rng);
  for (float& v : a) v = value(rng);
  ColumnStatistics out;
  out.Resize(StatsMode(), columns);
  ColumnReducer reducer(StatsMode(), kPaths, 0.98);
  double gemm_seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, kPaths, columns, kIssuers, 1.0f,
                st.data(), kPaths, a.data(), kIssuers, 0.0f, sc.data(), kPaths);
    gemm_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.ResumeTiming();
    for (int64_t k = 0; k < columns; ++k) reducer.Reduce(sc.data() + k * kPaths, 1800, k, &out);
    benchmark::DoNotOptimize(out.v0.data());
  }
  state.counters["us_per_column"] =
      benchmark::Counter(static_cast<double>(state.iterations() * columns) * 1e-6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["gemm_us_per_column"] =
      gemm_seconds * 1e6 / static_cast<double>(state.iterations() * columns);
}

void BM_Median(benchmark::State& state) {
  StatisticsSelection s;
  s.quantiles = {0.5};
  Reduce(state, s);
}

BENCHMARK(BM_Basic);
BENCHMARK(BM_VarEs);
BENCHMARK(BM_Median);
BENCHMARK(BM_StatsMode);
BENCHMARK(BM_StatsModePortable);
BENCHMARK(BM_StatsModeAvx2);
BENCHMARK(BM_StatsModeAvx512);
BENCHMARK(BM_StatsModeErrors);
BENCHMARK(BM_StatsModeAfterGemm)->Arg(64)->Arg(256)->Arg(512)->Arg(2048)->Iterations(3);
BENCHMARK(BM_GemmPerColumn)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pricer

// The processor's OpenBLAS kernels, as pricerd runs them.
int main(int argc, char** argv) {
  pricer::RunOnTheProcessorsBlasCore(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
