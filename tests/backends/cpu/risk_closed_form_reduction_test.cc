// The statistics the engine with the cpu backend sends beside the full
// result: each equal to its recomputation from that result, and the device
// time of a job split between GEMM and statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "server/scheduler/engine.h"
#include "tests/backends/cpu/engine_test_util.h"
#include "tests/backends/cpu/risk_closed_form_util.h"

namespace pricer {
namespace {

// A correlated, antithetic job with positions of both signs, whose full SC
// and every statistic are sent together.
JobSpec FullAndStatisticsSpec(StatisticsSelection selection) {
  const int64_t issuers = 8, columns = 24;
  Market market = MakeMarket({}, {}, kRate, kMaturity);
  for (int64_t i = 0; i < issuers; ++i) {
    market.spot.push_back(5.0 + 0.5 * static_cast<double>(i));
    market.volatility.push_back(0.05 + 0.1 * static_cast<double>(i));
  }
  market.correlation_factor = Factor(Equicorrelation(issuers, 0.3), issuers);
  std::mt19937_64 generator(3);
  std::uniform_real_distribution<float> position(-1.0f, 1.0f);
  std::vector<std::vector<float>> positions(static_cast<size_t>(columns));
  for (std::vector<float>& column : positions) {
    for (int64_t i = 0; i < issuers; ++i) column.push_back(position(generator));
  }
  positions[3].assign(static_cast<size_t>(issuers), 0.0f);  // a constant column: all zero
  JobSpec spec = MakeSpec(std::move(market), kPaths, 51, InlineScenarios(issuers, positions),
                          StatisticsOutput(std::move(selection), true));
  spec.antithetic = true;
  return spec;
}

TEST(RiskClosedFormTest, StatisticsEqualTheirRecomputationFromTheFullResult) {
  // With a median the reducer selects over whole columns; with lower-tail
  // levels only (P >= 2048) over a copy of the tail.
  StatisticsSelection everything = StatisticsSelection::Basic();
  everything.quantiles = {0.0, 0.01, 0.5, 0.975, 1.0};
  everything.var = {0.99, 0.975};
  everything.es = {0.99, 0.975};
  StatisticsSelection tail = StatisticsSelection::Basic();
  tail.quantiles = {0.0, 0.01};
  tail.var = {0.99, 0.975};
  tail.es = {0.99, 0.975};
  auto engine = MakeEngine();
  for (const StatisticsSelection& selection : {everything, tail}) {
    SCOPED_TRACE(std::to_string(selection.quantiles.size()) + " quantile levels");
    const JobSpec spec = FullAndStatisticsSpec(selection);
    const JobResult result = RunJob(*engine, spec);
    ASSERT_TRUE(result.status.ok()) << result.status;
    ExpectStatisticsOfFullResult(result, spec);
  }
}

TEST(RiskClosedFormTest, SummarySplitsDeviceTimeBetweenGemmAndStatistics) {
  const int64_t issuers = 8, columns = 512;
  const int threads = 2;
  Market market = MakeMarket({}, {}, kRate, kMaturity);
  for (int64_t i = 0; i < issuers; ++i) {
    market.spot.push_back(6.0);
    market.volatility.push_back(0.3);
  }
  StatisticsSelection selection = StatisticsSelection::Basic();
  selection.var = {0.99};
  auto engine = MakeEngine(kBudget, 1, threads);
  const JobResult result =
      RunJob(*engine, MakeSpec(market, kPaths, 61,
                               ScenarioMatrix::Generated(issuers, columns, 62, 0.0f, 1.0f),
                               StatisticsOutput(selection)));
  ASSERT_TRUE(result.status.ok()) << result.status;
  const JobSummary& summary = result.summary;
  EXPECT_GT(summary.gemm_seconds, 0.0);
  EXPECT_GT(summary.statistics_seconds, 0.0);
  // Thread-seconds of one device: its shards share its threads, each shard
  // running on at least one, so at most max(threads, shards in flight)
  // threads at any time during the job.
  const int most_threads = std::max(threads, EngineOptions{}.max_shards_in_flight);
  EXPECT_LE(summary.gemm_seconds + summary.statistics_seconds,
            most_threads * summary.elapsed_seconds + 0.01);
  EXPECT_EQ(summary.flops, 2.0 * kPaths * issuers * columns);
}

}  // namespace
}  // namespace pricer
