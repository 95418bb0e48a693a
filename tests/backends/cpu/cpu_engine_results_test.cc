// The results of the engine with the real cpu backend (OpenBLAS), driven the
// way the gRPC reactor drives it (engine_test_util.h): terminal prices
// against the lognormal law and the documented mapping, SC against the
// float64 product of ST and A, statistics against those of the full result,
// and chunks within the payload limit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "server/model/counter_rng.h"
#include "server/scheduler/engine.h"
#include "server/scheduler/shard_planner.h"
#include "tests/backends/cpu/cpu_engine_test_util.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {
namespace {

// z[p, i] recomputed in double by Box-Muller from the Philox words of counter
// (i / 4, p low, p high, stream 0).
double ReferenceShock(uint64_t seed, int64_t p, int64_t i) {
  const PhiloxCounter counter{{static_cast<uint32_t>(i / 4), static_cast<uint32_t>(p),
                               static_cast<uint32_t>(static_cast<uint64_t>(p) >> 32), 0u}};
  const PhiloxCounter w = Philox4x32_10(counter, KeyFromSeed(seed));
  const int pair = static_cast<int>(i % 4) / 2;
  const double radius = std::sqrt(-2.0 * std::log(ReferenceUniform(w.v[2 * pair])));
  const double angle = 2.0 * std::numbers::pi * ReferenceUniform(w.v[2 * pair + 1]);
  return i % 2 == 0 ? radius * std::cos(angle) : radius * std::sin(angle);
}

TEST(CpuEngineTest, TerminalPricesFollowTheLognormalLaw) {
  const int64_t paths = 200000;
  const double rate = 0.02, maturity = 1.5;
  const std::vector<double> spot = {7.0, 5.0, 10.0, 8.5, 6.0, 100.0};
  const std::vector<double> sigma = {0.0, 0.05, 0.2, 0.5, 0.8, 0.3};
  const int64_t issuers = static_cast<int64_t>(spot.size());
  const uint64_t seed = 42;
  auto engine = MakeEngine();
  const JobResult result =
      RunJob(*engine, MakeSpec(MakeMarket(spot, sigma, rate, maturity), paths, seed,
                               ScenarioMatrix::Generated(issuers, 16, 7, 0.0f, 1.0f),
                               Output(true, false, true)));
  ASSERT_TRUE(result.status.ok()) << result.status;

  for (int64_t i = 0; i < issuers; ++i) {
    SCOPED_TRACE("issuer " + std::to_string(i) + " sigma " + std::to_string(sigma[i]));
    const double s0 = spot[i], s2t = sigma[i] * sigma[i] * maturity;
    const double forward = s0 * std::exp(rate * maturity);
    if (sigma[i] == 0.0) {
      // No diffusion: every path is the forward, to float32 rounding of exp.
      for (int64_t p = 0; p < paths; ++p) ASSERT_EQ(result.St(p, i), result.St(0, i)) << p;
      EXPECT_NEAR(result.St(0, i), forward, 4 * kFloatEpsilon * forward);
      continue;
    }
    // Path by path: S0 exp((r - sigma^2/2) T + sigma sqrt(T) z), z from the
    // documented mapping; float32 exp and z leave a few 1e-7 relative.
    for (int64_t p = 0; p < paths; p += 997) {
      const double z = ReferenceShock(seed, p, i);
      const double expected = s0 * std::exp((rate - 0.5 * sigma[i] * sigma[i]) * maturity +
                                            sigma[i] * std::sqrt(maturity) * z);
      ASSERT_NEAR(result.St(p, i), expected, 1e-5 * expected) << "path " << p;
    }
    // The law: E = S0 e^{rT}, Var = S0^2 e^{2rT} (e^{sigma^2 T} - 1); the
    // standard error of the sample variance uses the lognormal fourth central
    // moment, Var^2 (e^{4 s} + 2 e^{3 s} + 3 e^{2 s} - 3) with s = sigma^2 T.
    double sum = 0;
    for (int64_t p = 0; p < paths; ++p) sum += result.St(p, i);
    const double mean = sum / static_cast<double>(paths);
    double squares = 0;
    for (int64_t p = 0; p < paths; ++p) squares += std::pow(result.St(p, i) - mean, 2);
    const double variance = squares / static_cast<double>(paths - 1);
    const double expected_variance = forward * forward * std::expm1(s2t);
    const double kurtosis = std::exp(4 * s2t) + 2 * std::exp(3 * s2t) + 3 * std::exp(2 * s2t) - 3;
    const double n = static_cast<double>(paths);
    EXPECT_NEAR(mean, forward, 5 * std::sqrt(expected_variance / n));
    EXPECT_NEAR(variance, expected_variance, 5 * expected_variance * std::sqrt((kurtosis - 1) / n));
  }
}

TEST(CpuEngineTest, ScenarioColumnsAreTheProductOfPricesAndInlineScenarios) {
  const int64_t paths = 4000, issuers = 7, columns = 300;
  std::mt19937_64 generator(3);
  std::uniform_real_distribution<float> position(-1.0f, 1.0f);
  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(issuers * columns));
  for (float& v : *values) v = position(generator);
  // A column of zeros and a column holding one issuer only.
  for (int64_t i = 0; i < issuers; ++i) {
    (*values)[static_cast<size_t>(i + 5 * issuers)] = 0.0f;
    (*values)[static_cast<size_t>(i + 6 * issuers)] = i == 3 ? 1.0f : 0.0f;
  }
  const Dense a(values->begin(), values->end());
  auto engine = MakeEngine();
  const JobResult result =
      RunJob(*engine, MakeSpec(SpreadMarket(issuers), paths, 11,
                               ScenarioMatrix::Inline(issuers, columns, values),
                               Output(true, true, true), /*shard_columns=*/64));
  ASSERT_TRUE(result.status.ok()) << result.status;
  ExpectProductMatches(result, a, issuers);
  for (int64_t p = 0; p < paths; ++p) {
    ASSERT_EQ(result.Sc(p, 5), 0.0f);
    ASSERT_EQ(result.Sc(p, 6), result.St(p, 3));
  }
}

TEST(CpuEngineTest, ScenarioColumnsAreTheProductOfPricesAndGeneratedScenarios) {
  auto engine = MakeEngine();
  const JobResult result = RunJob(*engine, ReproducibilitySpec(0, 0));
  ASSERT_TRUE(result.status.ok()) << result.status;
  ExpectProductMatches(result, ReferenceScenarios(kScenarioSeed, kIssuers, kColumns, 0.0, 1.0),
                       kIssuers);
}

TEST(CpuEngineTest, StatisticsEqualFloat64StatisticsOfTheFullResult) {
  auto engine = MakeEngine();
  const JobSpec spec = ReproducibilitySpec(192, 100);
  const JobResult result = RunJob(*engine, spec);
  ASSERT_TRUE(result.status.ok()) << result.status;
  ExpectStatisticsOfFullResult(result, spec);
}

TEST(CpuEngineTest, ChunksRespectThePayloadLimitAndTileTheRange) {
  // 1.2 MB per column: the payload limit splits both the 44 columns and the
  // 8 issuers into several chunks.
  const int64_t paths = 300000, issuers = 8, columns = 50;
  JobSpec spec = MakeSpec(SpreadMarket(issuers), paths, 5,
                          ScenarioMatrix::Generated(issuers, columns, 6, 0.0f, 1.0f),
                          Output(true, true, true));
  spec.column_begin = 3;
  spec.column_end = 47;
  auto engine = MakeEngine();
  // Collect checks every chunk's payload, shape and the tiling.
  const JobResult result = RunJob(*engine, std::move(spec));
  ASSERT_TRUE(result.status.ok()) << result.status;
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t columns_per_chunk = kMaxChunkPayloadBytes / (paths * 4 + 5 * 8);
  const int64_t issuers_per_chunk = kMaxChunkPayloadBytes / (paths * 4);
  EXPECT_GE(result.chunks, ceil_div(44, columns_per_chunk) + ceil_div(issuers, issuers_per_chunk));
}

TEST(CpuEngineTest, TerminalPricesOnlyJobSendsTheSamePrices) {
  auto engine = MakeEngine();
  const JobResult full = RunJob(*engine, ReproducibilitySpec(0, 0));
  JobSpec spec = ReproducibilitySpec(0, 0);
  spec.output = Output(false, false, true);
  const JobResult prices = RunJob(*engine, std::move(spec));
  ASSERT_TRUE(prices.status.ok()) << prices.status;
  EXPECT_TRUE(prices.sc.empty());
  EXPECT_EQ(prices.st, full.st);
}

}  // namespace
}  // namespace pricer
