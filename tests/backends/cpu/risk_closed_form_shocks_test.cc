// The shocks of the engine with the cpu backend: the requested correlation,
// antithetic pairs mirrored in the terminal prices, and the smaller error
// antithetic paths give a near-linear portfolio. The tolerance rule is in
// risk_closed_form_util.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "server/model/counter_rng.h"
#include "server/scheduler/engine.h"
#include "tests/backends/cpu/engine_test_util.h"
#include "tests/backends/cpu/risk_closed_form_util.h"

namespace pricer {
namespace {

TEST(RiskClosedFormTest, ShocksHaveTheRequestedCorrelation) {
  const int64_t issuers = 4;
  const std::vector<double> correlation = {1.0,  0.6, -0.3, 0.2,   //
                                           0.6,  1.0, 0.1,  0.4,   //
                                           -0.3, 0.1, 1.0,  -0.5,  //
                                           0.2,  0.4, -0.5, 1.0};
  Market market = MakeMarket({5.0, 6.0, 7.0, 8.0}, {0.2, 0.3, 0.4, 0.5}, kRate, kMaturity);
  market.correlation_factor = Factor(correlation, issuers);
  auto engine = MakeEngine();
  const JobResult result = RunJob(
      *engine, MakeSpec(market, kPaths, 31, ScenarioMatrix::Generated(issuers, 1, 1, 0.0f, 1.0f),
                        Output(false, false, true)));
  ASSERT_TRUE(result.status.ok()) << result.status;
  std::vector<std::vector<double>> x;
  const double n = static_cast<double>(kPaths);
  for (int64_t i = 0; i < issuers; ++i) {
    x.push_back(RecoveredShocks(result, market, i));
    // Each shock stays standard normal: mean 0 (SE 1/sqrt(P)), variance 1
    // (SE sqrt(2/P)).
    const double mean = SampleMean(x.back());
    double squares = 0;
    for (const double v : x.back()) squares += (v - mean) * (v - mean);
    EXPECT_NEAR(mean, 0.0, kSigmas / std::sqrt(n)) << "issuer " << i;
    EXPECT_NEAR(squares / (n - 1), 1.0, kSigmas * std::sqrt(2.0 / n)) << "issuer " << i;
  }
  for (int64_t i = 0; i < issuers; ++i) {
    for (int64_t j = i + 1; j < issuers; ++j) {
      const double rho = correlation[static_cast<size_t>(i * issuers + j)];
      EXPECT_NEAR(SampleCorrelation(x[static_cast<size_t>(i)], x[static_cast<size_t>(j)]), rho,
                  kSigmas * (1 - rho * rho) / std::sqrt(n))
          << "issuers " << i << ", " << j;
    }
  }
}

TEST(RiskClosedFormTest, AntitheticTerminalPricesComeInMirroredPairs) {
  // Path 2k + 1 takes the exact negation of the shocks of path 2k, so the
  // shocks recovered from ST sum to zero up to the float32 rounding of ST
  // (a few ulps of the exponent, over the diffusion). P is odd: the last path
  // has no partner and keeps the standard normals of its own index.
  const int64_t issuers = 5, paths = kPaths + 1;
  const uint64_t seed = 41;
  Market market =
      MakeMarket({5.0, 6.0, 7.0, 8.0, 9.0}, {0.1, 0.25, 0.4, 0.55, 0.7}, kRate, kMaturity);
  for (const bool correlated : {false, true}) {
    SCOPED_TRACE(correlated ? "correlated" : "independent");
    market.correlation_factor =
        correlated ? Factor(Equicorrelation(issuers, 0.4), issuers) : std::vector<float>{};
    JobSpec spec =
        MakeSpec(market, paths, seed, ScenarioMatrix::Generated(issuers, 1, 1, 0.0f, 1.0f),
                 Output(false, false, true));
    spec.antithetic = true;
    auto engine = MakeEngine();
    const JobResult result = RunJob(*engine, spec);
    ASSERT_TRUE(result.status.ok()) << result.status;
    for (int64_t i = 0; i < issuers; ++i) {
      const std::vector<double> x = RecoveredShocks(result, market, i);
      const double sigma = market.volatility[static_cast<size_t>(i)];
      const double drift = std::fabs((kRate - 0.5 * sigma * sigma) * kMaturity);
      const double diffusion = sigma * std::sqrt(kMaturity);
      auto rounding = [&](double shock) {
        return 16 * kFloatEpsilon * (1 + drift + diffusion * std::fabs(shock)) / diffusion;
      };
      int64_t failures = 0;
      double pair_sum = 0;
      for (int64_t p = 0; p + 1 < paths; p += 2) {
        const double sum = x[static_cast<size_t>(p)] + x[static_cast<size_t>(p + 1)];
        pair_sum += sum;
        if (!(std::fabs(sum) <= rounding(x[static_cast<size_t>(p)])) && failures++ < 3) {
          ADD_FAILURE() << "issuer " << i << " paths " << p << ", " << p + 1 << ": "
                        << x[static_cast<size_t>(p)] << " + " << x[static_cast<size_t>(p + 1)]
                        << " = " << sum;
        }
      }
      EXPECT_EQ(failures, 0) << "issuer " << i;
      EXPECT_NEAR(pair_sum / static_cast<double>(paths / 2), 0.0, 1e-5) << "issuer " << i;
      if (!correlated) {
        // Even paths and the unpaired last one: the standard normals.
        for (const int64_t p : {int64_t{0}, int64_t{2}, int64_t{1000}, paths - 1}) {
          const double z = StandardNormal(seed, static_cast<uint64_t>(p), static_cast<uint32_t>(i));
          EXPECT_NEAR(x[static_cast<size_t>(p)], z, rounding(z)) << "issuer " << i << " path " << p;
        }
      }
      EXPECT_GT(std::fabs(x[static_cast<size_t>(paths - 1)] + x[static_cast<size_t>(paths - 2)]),
                1e-3)
          << "the last path must not mirror path P - 2";
    }
  }
}

TEST(RiskClosedFormTest, AntitheticShrinksTheErrorOfANearLinearPortfolio) {
  // With sigma = 0.05 the positions are nearly linear in the shocks, which
  // antithetic pairs cancel: the spread over seeds of the column mean drops
  // by about 1 / (sigma sqrt(T)), i.e. ~16x; at least 3x is required.
  const int64_t issuers = 4, columns = 8, seeds = 8;
  const Market market =
      MakeMarket({5.0, 6.0, 7.0, 8.0}, {0.05, 0.05, 0.05, 0.05}, kRate, kMaturity);
  auto engine = MakeEngine();
  auto spread_of_means = [&](bool antithetic) {
    std::vector<std::vector<double>> means(static_cast<size_t>(columns));
    for (uint64_t seed = 1; seed <= static_cast<uint64_t>(seeds); ++seed) {
      JobSpec spec =
          MakeSpec(market, kPaths, seed, ScenarioMatrix::Generated(issuers, columns, 5, 0.0f, 1.0f),
                   Output(false, true, false));
      spec.antithetic = antithetic;
      const JobResult result = RunJob(*engine, spec);
      EXPECT_TRUE(result.status.ok()) << result.status;
      for (size_t j = 0; j < static_cast<size_t>(columns); ++j) {
        means[j].push_back(result.statistics.mean.empty() ? NAN : result.statistics.mean[j]);
      }
    }
    std::vector<double> spread;
    for (const std::vector<double>& m : means) {
      const double mean = SampleMean(m);
      double squares = 0;
      for (const double v : m) squares += (v - mean) * (v - mean);
      spread.push_back(std::sqrt(squares / static_cast<double>(seeds - 1)));
    }
    return spread;
  };
  const std::vector<double> plain = spread_of_means(false);
  const std::vector<double> antithetic = spread_of_means(true);
  for (size_t j = 0; j < static_cast<size_t>(columns); ++j) {
    EXPECT_GE(plain[j], 3 * antithetic[j]) << "column " << j << ": spread " << plain[j]
                                           << " plain, " << antithetic[j] << " antithetic";
  }
}

}  // namespace
}  // namespace pricer
