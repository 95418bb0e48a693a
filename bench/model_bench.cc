// The hot parts of a job outside the GEMM, on one thread each:
//  - the model: Philox shocks (PathShocks4) and terminal prices
//    (TerminalPrice) for a block of paths x issuers, as the cpu device builds
//    ST; items/s are path-issuer pairs per second;
//  - the reply encoding: one engine ResultChunk turned into a v1::PriceReply
//    (ToReply, what the service does per chunk) and serialized to bytes, for a
//    full-output chunk (P = 10,000, 103 columns: the ~4 MiB a full-mode reply
//    carries) and a statistics chunk (2,000 columns, mean/stddev/VaR/ES);
//    bytes/s are serialized reply bytes per second; and EncodeReply, what the
//    service sends now (the values a slice of the chunk's buffer, not copied),
//    for those two and a chunk of one ES level's contributions (500 rows x
//    2,000 columns, slices of its shard's array too).
//  - the Cholesky factor of a job's correlation matrix (its preparation).
//  - a generated scenario block: the 500 x 256 block of A that the cpu device
//    makes before each block's GEMM (ScenarioMatrix::CopyColumns of the seed
//    preset); column_reducer_bench's BM_GemmPerColumn times that GEMM.
// The per-column statistics kernel is column_reducer_bench.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "server/model/correlation.h"
#include "server/model/counter_rng.h"
#include "server/model/gbm.h"
#include "server/model/job_spec.h"
#include "server/model/statistics.h"
#include "server/scheduler/result_stream.h"
#include "server/service/reply_encoding.h"

namespace pricer {
namespace {

constexpr uint64_t kSeed = 42;

// ST for paths x issuers (column-major), the cpu device's loops on one
// thread: the shocks path by path, then the terminal price issuer by issuer.
void BM_ShocksAndTerminalPrices(benchmark::State& state) {
  const int64_t paths = state.range(0), issuers = state.range(1);
  std::vector<float> spot(issuers), drift(issuers), diffusion(issuers);
  for (int64_t i = 0; i < issuers; ++i) {
    const double sigma = 0.01 + 0.98 * static_cast<double>(i) / static_cast<double>(issuers);
    spot[i] = 5.0f + 5.0f * static_cast<float>(i) / static_cast<float>(issuers);
    drift[i] = static_cast<float>(0.02 - 0.5 * sigma * sigma);
    diffusion[i] = static_cast<float>(sigma);
  }
  std::vector<float> st(static_cast<size_t>(paths * issuers));
  for (auto _ : state) {
    for (int64_t p = 0; p < paths; ++p) {
      for (int64_t block = 0; block * 4 < issuers; ++block) {
        float z[4];
        PathShocks4(kSeed, static_cast<uint64_t>(p), static_cast<uint32_t>(block), false, z);
        for (int64_t m = 0; m < 4 && block * 4 + m < issuers; ++m) {
          st[(block * 4 + m) * paths + p] = z[m];
        }
      }
    }
    for (int64_t i = 0; i < issuers; ++i) {
      for (int64_t p = 0; p < paths; ++p) {
        st[i * paths + p] = TerminalPrice(spot[i], drift[i], diffusion[i], st[i * paths + p]);
      }
    }
    benchmark::DoNotOptimize(st.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * paths * issuers);
}

// 1,000 paths of the original example's 500 issuers (its ST is ten such
// blocks), and a small job's 10 issuers (not a multiple of 4: the last
// Philox call's two spare normals are drawn and dropped).
BENCHMARK(BM_ShocksAndTerminalPrices)
    ->Args({1'000, 500})
    ->Args({10'000, 10})
    ->Unit(benchmark::kMillisecond);

void BM_GeneratedScenarioBlock(benchmark::State& state) {
  constexpr int64_t kIssuers = 500, kBlock = 256;
  const ScenarioMatrix a = ScenarioMatrix::Generated(kIssuers, 1'000'000, kSeed, 0.0f, 1.0f);
  std::vector<float> block(kIssuers * kBlock);
  int64_t first = 0;
  for (auto _ : state) {
    a.CopyColumns(first, kBlock, block.data());
    first = (first + kBlock) % 999'936;
    benchmark::DoNotOptimize(block.data());
  }
  state.SetItemsProcessed(state.iterations() * kIssuers * kBlock);
}
BENCHMARK(BM_GeneratedScenarioBlock)->Unit(benchmark::kMillisecond);

// A chunk of `columns` columns of `rows` paths: the values when `full`, and
// the statistics of `selection` when it asks for any.
ResultChunk MakeChunk(int64_t rows, int64_t columns, bool full,
                      const StatisticsSelection& selection) {
  std::mt19937 rng(1);
  std::lognormal_distribution<float> value(7.5f, 0.04f);
  ResultChunk chunk;
  chunk.begin = 1'000'000;
  chunk.end = chunk.begin + columns;
  chunk.rows = rows;
  if (full) {
    std::vector<float> values(static_cast<size_t>(rows * columns));
    for (float& v : values) v = value(rng);
    chunk.values = SharedFloats(std::move(values));
  }
  if (selection.any()) {
    ColumnStatistics& s = chunk.statistics;
    s.Resize(selection, columns);
    for (std::vector<double>* array : {&s.v0, &s.mean, &s.stddev, &s.min, &s.max}) {
      for (double& v : *array) v = value(rng);
    }
    for (std::vector<std::vector<double>>* levels : {&s.quantiles, &s.var, &s.es}) {
      for (std::vector<double>& level : *levels) {
        for (double& v : level) v = value(rng);
      }
    }
  }
  return chunk;
}

// `convert`: ToReply and serialize (the service's work per chunk); else the
// serialization of a ready reply only. The buffer is reused, as gRPC's slab
// would be, so the allocation of the output is not timed.
void Encode(benchmark::State& state, const ResultChunk& chunk, const StatisticsSelection& selection,
            bool convert) {
  v1::PriceReply reply;
  ToReply(chunk, selection, &reply);
  std::string bytes(reply.ByteSizeLong(), '\0');
  for (auto _ : state) {
    if (convert) ToReply(chunk, selection, &reply);
    const size_t size = reply.ByteSizeLong();
    if (bytes.size() < size) bytes.resize(size);
    if (!reply.SerializeToArray(bytes.data(), static_cast<int>(size))) {
      state.SkipWithError("SerializeToArray failed");
      return;
    }
    benchmark::DoNotOptimize(bytes.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(reply.ByteSizeLong()));
  state.counters["reply_bytes"] = static_cast<double>(reply.ByteSizeLong());
}

// Full output: P = 10,000 paths x 103 columns (4,120,000 bytes of SC, the
// most one reply carries) with mean and stddev, as `--full-out --stats mean,stddev`.
StatisticsSelection FullSelection() {
  StatisticsSelection s;
  s.mean = s.stddev = true;
  return s;
}

// Statistics only: 2,000 columns of mean, stddev, VaR and ES at 99%.
StatisticsSelection StatsSelection() {
  StatisticsSelection s;
  s.mean = s.stddev = true;
  s.var = {0.99};
  s.es = {0.99};
  return s;
}

void BM_EncodeFullChunk(benchmark::State& state) {
  Encode(state, MakeChunk(10'000, 103, true, FullSelection()), FullSelection(),
         state.range(0) != 0);
}

void BM_EncodeStatsChunk(benchmark::State& state) {
  Encode(state, MakeChunk(10'000, 2'000, false, StatsSelection()), StatsSelection(),
         state.range(0) != 0);
}

// Arg 1: ToReply + serialize; arg 0: serialize only.
BENCHMARK(BM_EncodeFullChunk)->ArgName("to_reply")->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeStatsChunk)->ArgName("to_reply")->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

// What the service does per chunk since Price is raw: EncodeReply, the
// values appended as a slice of the chunk's buffer (no copy of them).
void EncodeRaw(benchmark::State& state, const ResultChunk& chunk,
               const StatisticsSelection& selection) {
  size_t bytes = 0;
  for (auto _ : state) {
    const grpc::ByteBuffer buffer = EncodeReply(chunk, selection);
    bytes = buffer.Length();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
  state.counters["reply_bytes"] = static_cast<double>(bytes);
}
void BM_EncodeReplyFullChunk(benchmark::State& state) {
  EncodeRaw(state, MakeChunk(10'000, 103, true, FullSelection()), FullSelection());
}
void BM_EncodeReplyStatsChunk(benchmark::State& state) {
  EncodeRaw(state, MakeChunk(10'000, 2'000, false, StatsSelection()), StatsSelection());
}
// One ES level's contributions to the seed's 500 issuers, 2,000 columns (the
// ~4 MiB a reply carries), ranges of a shard's arrays as the engine cuts them:
// issue 30's "at the full-output rate per byte" against BM_EncodeReplyFullChunk.
void BM_EncodeReplyContributionsChunk(benchmark::State& state) {
  StatisticsSelection selection = StatsSelection();
  selection.es_contributions = {0.99};
  const int64_t columns = 2'000, issuers = 500;
  ResultChunk chunk = MakeChunk(10'000, columns, false, selection);
  ColumnStatistics shard;
  shard.Resize(selection, 2 * columns, issuers);
  std::mt19937 rng(2);
  std::normal_distribution<float> value(0.0f, 1.0f);
  for (float& v : shard.contributions[0]) v = value(rng);
  chunk.contributions = ContributionBlocks::Take(&shard).Range(columns, columns);
  EncodeRaw(state, chunk, selection);
}
BENCHMARK(BM_EncodeReplyFullChunk)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeReplyStatsChunk)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeReplyContributionsChunk)->Unit(benchmark::kMicrosecond);

// The Cholesky factor of an n x n correlation (equicorrelated, rho = 0.3),
// blocked with a stop poll before each block as a job's preparation runs it.
void BM_CholeskyFactor(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<double> correlation(static_cast<size_t>(n * n), 0.3);
  for (int64_t i = 0; i < n; ++i) correlation[static_cast<size_t>(i * n + i)] = 1.0;
  int64_t polls = 0;
  for (auto _ : state) {
    absl::StatusOr<std::vector<float>> lower = CholeskyFactor(correlation, n, [&polls] {
      ++polls;
      return absl::OkStatus();
    });
    if (!lower.ok()) state.SkipWithError(std::string(lower.status().message()).c_str());
    benchmark::DoNotOptimize(lower);
  }
  state.counters["polls"] =
      benchmark::Counter(static_cast<double>(polls), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_CholeskyFactor)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pricer

BENCHMARK_MAIN();
