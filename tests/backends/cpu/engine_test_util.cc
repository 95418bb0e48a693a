#include "tests/backends/cpu/engine_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "server/backends/cpu/cpu_device.h"
#include "server/scheduler/result_stream.h"
#include "server/scheduler/shard_planner.h"
#include "tests/model/statistics_reference.h"
#include "tests/time_scale.h"

namespace pricer {
namespace {

// The arrays of a ColumnStatistics, paired with those of another.
template <typename Stats, typename Other, typename Body>
void ForEachArray(Stats& a, Other& b, Body body) {
  body(a.v0, b.v0);
  body(a.mean, b.mean);
  body(a.stddev, b.stddev);
  body(a.min, b.min);
  body(a.max, b.max);
  for (auto [to, from] : {std::pair{&a.quantiles, &b.quantiles}, std::pair{&a.var, &b.var},
                          std::pair{&a.es, &b.es}}) {
    for (size_t l = 0; l < std::min(to->size(), from->size()); ++l) body((*to)[l], (*from)[l]);
  }
}

// The float32 blocks of a ColumnStatistics (contributions, sensitivities and
// their errors), paired with another's or a chunk's (ForEachContributionBlock),
// as many levels in each.
template <typename B, typename Body>
void ForEachBlock(ColumnStatistics& a, B& b, Body body) {
  ForEachContributionBlock(a, b, [&](auto& to, const auto& from, int64_t rows) {
    EXPECT_EQ(to.size(), from.size());
    for (size_t l = 0; l < std::min(to.size(), from.size()); ++l) body(to[l], from[l], rows);
  });
}

// How many times each column and each issuer of a job arrived.
struct Tally {
  std::vector<int> column_seen, issuer_seen, instrument_seen;
};

// The result of `spec` before any chunk: NaN wherever a chunk must land.
JobResult EmptyResult(const JobSpec& spec, Tally* tally) {
  const StatisticsSelection& selection = spec.output.statistics;
  const int64_t paths = spec.paths;
  const int64_t issuers = spec.market.issuers();
  JobResult result;
  result.paths = paths;
  result.column_begin = spec.column_begin;
  result.column_end = spec.column_end;
  const int64_t columns = spec.column_end - spec.column_begin;
  const bool scenario_chunks = spec.output.full || selection.any();
  tally->column_seen.assign(scenario_chunks ? static_cast<size_t>(columns) : 0, 0);
  tally->issuer_seen.assign(spec.output.terminal_prices ? static_cast<size_t>(issuers) : 0, 0);
  if (spec.output.full) result.sc.assign(static_cast<size_t>(columns * paths), NAN);
  if (selection.any()) {
    result.statistics.Resize(selection, columns, spec.position_rows(), issuers);
    ForEachArray(
        result.statistics, result.statistics,
        [](std::vector<double>& v, std::vector<double>&) { std::fill(v.begin(), v.end(), NAN); });
    ForEachBlock(result.statistics, result.statistics,
                 [](std::vector<float>& v, const std::vector<float>&, int64_t) {
                   std::fill(v.begin(), v.end(), NAN);
                 });
  }
  if (spec.output.terminal_prices) result.st.assign(static_cast<size_t>(issuers * paths), NAN);
  const auto instruments = static_cast<int64_t>(spec.instruments.size());
  if (spec.output.instrument_values) {
    tally->instrument_seen.assign(static_cast<size_t>(instruments), 0);
    result.v.assign(static_cast<size_t>(instruments * paths), NAN);
  }
  return result;
}

// Checks the shape of a chunk of terminal prices (or of a book's values)
// and copies it into `result`; false, copying nothing, when it does not fit.
bool TakePathColumns(const JobSpec& spec, const ResultChunk& chunk, JobResult* result,
                     Tally* tally) {
  const bool values = chunk.kind == ResultChunk::Kind::kInstrumentValues;
  const int64_t paths = spec.paths;
  const int64_t columns =
      values ? static_cast<int64_t>(spec.instruments.size()) : spec.market.issuers();
  const int64_t width = chunk.end - chunk.begin;
  EXPECT_TRUE(values ? spec.output.instrument_values : spec.output.terminal_prices);
  EXPECT_GE(chunk.begin, 0);
  EXPECT_LE(chunk.end, columns);
  EXPECT_EQ(static_cast<int64_t>(chunk.values.size()), paths * width);
  EXPECT_EQ(chunk.statistics.values(), 0);
  std::vector<float>& to = values ? result->v : result->st;
  if (chunk.begin < 0 || chunk.end > columns ||
      static_cast<int64_t>(chunk.values.size()) != paths * width ||
      static_cast<int64_t>(to.size()) != paths * columns) {
    return false;
  }
  std::vector<int>& seen = values ? tally->instrument_seen : tally->issuer_seen;
  for (int64_t i = chunk.begin; i < chunk.end; ++i) ++seen[static_cast<size_t>(i)];
  std::copy(chunk.values.begin(), chunk.values.end(), to.begin() + chunk.begin * paths);
  return true;
}

// Checks the shape of a chunk of scenario columns (SC and the selected
// statistics) and copies it into `result`; false, copying nothing, when it
// does not fit there.
bool TakeScenarioColumns(const JobSpec& spec, const ResultChunk& chunk, JobResult* result,
                         Tally* tally) {
  const StatisticsSelection& selection = spec.output.statistics;
  const int64_t paths = spec.paths;
  const int64_t width = chunk.end - chunk.begin;
  EXPECT_TRUE(spec.output.full || selection.any());
  EXPECT_GE(chunk.begin, spec.column_begin);
  EXPECT_LE(chunk.end, spec.column_end);
  const int64_t expected_values = spec.output.full ? paths * width : 0;
  const int64_t expected_statistics = selection.any() ? width : 0;
  EXPECT_EQ(static_cast<int64_t>(chunk.values.size()), expected_values);
  EXPECT_EQ(chunk.statistics.columns(), expected_statistics);
  // Exactly the selected statistics, one value per column each.
  EXPECT_EQ(chunk.statistics.values(), width * selection.values_per_column());
  EXPECT_EQ(chunk.statistics.quantiles.size(), selection.quantiles.size());
  EXPECT_EQ(chunk.statistics.var.size(), selection.var.size());
  EXPECT_EQ(chunk.statistics.es.size(), selection.es.size());
  // Each contributed level: A's rows per column (the issuers for the
  // sensitivities), and as many errors.
  const ContributionBlocks& got = chunk.contributions;
  ColumnStatistics& into = result->statistics;
  auto contributions_fit = [&] {
    bool fit = got.contribution_rows == into.contribution_rows &&
               got.sensitivity_rows == into.sensitivity_rows;
    ForEachBlock(into, got, [&](std::vector<float>&, const SharedFloats& from, int64_t rows) {
      fit = fit && static_cast<int64_t>(from.size()) == width * rows;
    });
    return fit;
  };
  EXPECT_TRUE(contributions_fit());
  if (chunk.begin < spec.column_begin || chunk.end > spec.column_end ||
      static_cast<int64_t>(chunk.values.size()) != expected_values ||
      chunk.statistics.columns() != expected_statistics ||
      chunk.statistics.values() != width * selection.values_per_column() || !contributions_fit()) {
    return false;
  }
  const int64_t offset = chunk.begin - spec.column_begin;
  for (int64_t k = 0; k < width; ++k) ++tally->column_seen[static_cast<size_t>(offset + k)];
  std::copy(chunk.values.begin(), chunk.values.end(), result->sc.begin() + offset * paths);
  ForEachArray(result->statistics, chunk.statistics,
               [&](std::vector<double>& to, const std::vector<double>& from) {
                 std::copy(from.begin(), from.end(), to.begin() + offset);
               });
  ForEachBlock(into, got, [&](std::vector<float>& to, const SharedFloats& from, int64_t rows) {
    std::copy(from.begin(), from.end(), to.begin() + offset * rows);
  });
  return true;
}

// Every column and every issuer arrived exactly once (the first that did
// not is reported).
void ExpectEachOnce(const JobSpec& spec, const Tally& tally) {
  for (size_t k = 0; k < tally.column_seen.size(); ++k) {
    EXPECT_EQ(tally.column_seen[k], 1) << "column " << spec.column_begin + static_cast<int64_t>(k);
    if (tally.column_seen[k] != 1) break;
  }
  for (size_t i = 0; i < tally.issuer_seen.size(); ++i) {
    EXPECT_EQ(tally.issuer_seen[i], 1) << "issuer " << i;
    if (tally.issuer_seen[i] != 1) break;
  }
  for (size_t k = 0; k < tally.instrument_seen.size(); ++k) {
    EXPECT_EQ(tally.instrument_seen[k], 1) << "instrument " << k;
    if (tally.instrument_seen[k] != 1) break;
  }
}

}  // namespace

std::unique_ptr<Engine> MakeEngine(int64_t budget, int devices, int threads,
                                   EngineOptions options) {
  std::vector<std::unique_ptr<Device>> list;
  for (int d = 0; d < devices; ++d) {
    list.push_back(std::make_unique<CpuDevice>("cpu" + std::to_string(d), budget, threads));
  }
  return std::make_unique<Engine>(std::move(list), options);
}

OutputSelection Output(bool full, bool statistics, bool terminal_prices, int64_t chunk_columns) {
  OutputSelection output;
  output.full = full;
  output.statistics = statistics ? StatisticsSelection::Basic() : StatisticsSelection{};
  output.terminal_prices = terminal_prices;
  output.chunk_columns = chunk_columns;
  return output;
}

Market MakeMarket(std::vector<double> spot, std::vector<double> volatility, double rate,
                  double maturity) {
  Market market;
  market.spot = std::move(spot);
  market.volatility = std::move(volatility);
  market.rate = rate;
  market.maturity = maturity;
  return market;
}

JobSpec MakeSpec(Market market, int64_t paths, uint64_t seed, ScenarioMatrix scenarios,
                 OutputSelection output, int64_t shard_columns) {
  JobSpec spec;
  spec.market = std::move(market);
  spec.paths = paths;
  spec.seed = seed;
  spec.column_begin = 0;
  spec.column_end = scenarios.columns();
  spec.scenarios = std::move(scenarios);
  spec.output = std::move(output);
  spec.shard_columns = shard_columns;
  return spec;
}

std::vector<float> JobResult::ScColumn(int64_t j) const {
  const auto first = sc.begin() + (j - column_begin) * paths;
  return std::vector<float>(first, first + paths);
}

std::vector<float> JobResult::StColumn(int64_t i) const {
  const auto first = st.begin() + i * paths;
  return std::vector<float>(first, first + paths);
}

JobResult Collect(Job& job, std::chrono::seconds timeout) {
  const JobSpec& spec = job.spec();
  Tally tally;
  JobResult result = EmptyResult(spec, &tally);
  const std::chrono::milliseconds limit = Scaled(timeout);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    std::optional<ResultChunk> chunk = job.results().Pop();
    if (!chunk) {
      if (job.results().Drained(&result.status)) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "job " << job.id() << " did not finish in " << limit.count() << " ms";
        job.Cancel(absl::DeadlineExceededError("test timeout"));
        return result;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    ++result.chunks;
    EXPECT_LE(chunk->payload_bytes(), kMaxChunkPayloadBytes);
    EXPECT_EQ(chunk->rows, spec.paths);
    EXPECT_LT(chunk->begin, chunk->end);
    const bool taken = chunk->kind == ResultChunk::Kind::kScenarioColumns
                           ? TakeScenarioColumns(spec, *chunk, &result, &tally)
                           : TakePathColumns(spec, *chunk, &result, &tally);
    if (!taken) continue;  // a chunk of the wrong shape is not released
    job.results().Release(chunk->payload_bytes());
  }
  result.summary = job.Summary();
  if (result.status.ok()) ExpectEachOnce(spec, tally);
  return result;
}

JobResult RunJob(Engine& engine, JobSpec spec) {
  absl::StatusOr<std::shared_ptr<Job>> job = engine.Submit(std::move(spec));
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return JobResult{};
  return Collect(**job);
}

double ReferenceV0(const JobSpec& spec, int64_t j, const std::vector<double>& today) {
  const std::vector<double>& x0 = today.empty() ? spec.market.spot : today;
  std::vector<float> positions(static_cast<size_t>(spec.scenarios.rows()));
  spec.scenarios.CopyColumns(j, 1, positions.data());
  double v0 = 0;
  for (size_t i = 0; i < positions.size(); ++i) v0 += static_cast<double>(positions[i]) * x0[i];
  return v0;
}

void ExpectStatisticsOfFullResult(const JobResult& result, const JobSpec& spec,
                                  const std::vector<double>& today) {
  const StatisticsSelection& selection = spec.output.statistics;
  ASSERT_FALSE(result.sc.empty());
  ASSERT_TRUE(selection.any());
  const double discount = std::exp(-spec.market.rate * spec.market.maturity);
  for (int64_t j = result.column_begin; j < result.column_end; ++j) {
    SCOPED_TRACE("column " + std::to_string(j));
    const int64_t k = j - result.column_begin;
    const std::vector<float> values = result.ScColumn(j);
    if (selection.mean && selection.stddev && selection.min && selection.max) {
      ExpectMomentsMatch(result.statistics, k, values, 1e-12);
    }
    ExpectRiskMatches(result.statistics, k, selection, values, ReferenceV0(spec, j, today),
                      discount);
  }
}

}  // namespace pricer
