// The per-column statistics against the GEMM that produces the column: how
// many microseconds one column of P = 10,000 paths costs for each selection.
// For scale, the GEMM of one column with N = 500 issuers is 2 * P * N = 1e7
// flops, about 300 us on one core at 33 GFLOP/s.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "server/backends/cpu/column_reducer.h"

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

void Reduce(benchmark::State& state, const StatisticsSelection& selection) {
  const std::vector<float> values = Columns();
  ColumnStatistics out;
  out.Resize(selection, kColumns);
  ColumnReducer reducer(selection, kPaths, 0.98);
  for (auto _ : state) {
    for (int64_t k = 0; k < kColumns; ++k)
      reducer.Reduce(values.data() + k * kPaths, 1800, k, &out);
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

void BM_Median(benchmark::State& state) {
  StatisticsSelection s;
  s.quantiles = {0.5};
  Reduce(state, s);
}

BENCHMARK(BM_Basic);
BENCHMARK(BM_VarEs);
BENCHMARK(BM_Median);

}  // namespace
}  // namespace pricer

BENCHMARK_MAIN();
