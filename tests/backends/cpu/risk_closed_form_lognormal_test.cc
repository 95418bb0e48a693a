// The risk statistics of the engine with the cpu backend against the closed
// forms of the lognormal model: one-issuer portfolios, the risk-neutral
// identity E[PnL] = 0 for random portfolios, and a nearly perfectly
// correlated pair acting as one issuer of double weight. The tolerance rule
// is in risk_closed_form_util.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "server/scheduler/engine.h"
#include "tests/backends/cpu/engine_test_util.h"
#include "tests/backends/cpu/risk_closed_form_util.h"

namespace pricer {
namespace {

TEST(RiskClosedFormTest, OneIssuerPortfoliosMatchTheLognormalClosedForms) {
  const std::vector<double> spot = {8.0, 5.0, 6.0, 7.0};
  const std::vector<double> sigma = {0.1, 0.3, 0.6, 0.2};
  const int64_t issuers = 4;
  const float weight = 2.5f;
  // Column j holds issuer j alone, with weight w.
  std::vector<std::vector<float>> columns;
  for (int64_t j = 0; j < issuers; ++j) {
    columns.emplace_back(static_cast<size_t>(issuers), 0.0f);
    columns.back()[static_cast<size_t>(j)] = weight;
  }
  const StatisticsSelection selection = RiskSelection();
  auto engine = MakeEngine();
  const JobResult result =
      RunJob(*engine, MakeSpec(MakeMarket(spot, sigma, kRate, kMaturity), kPaths, 7,
                               InlineScenarios(issuers, columns), StatisticsOutput(selection)));
  ASSERT_TRUE(result.status.ok()) << result.status;
  const ColumnStatistics& stats = result.statistics;
  for (size_t j = 0; j < static_cast<size_t>(issuers); ++j) {
    SCOPED_TRACE("issuer " + std::to_string(j) + " sigma " + std::to_string(sigma[j]));
    const LognormalPosition position{weight * spot[j], sigma[j]};
    EXPECT_DOUBLE_EQ(stats.v0[j], weight * spot[j]);
    ExpectLognormalRisk(stats, j, selection, position);
    for (size_t l = 0; l < selection.quantiles.size(); ++l) {
      const double q = selection.quantiles[l];
      EXPECT_NEAR(stats.quantiles[l][j], position.Quantile(q), kSigmas * position.QuantileError(q))
          << "quantile " << q;
    }
    // The order statistics are ordered.
    EXPECT_GT(stats.min[j], 0.0);
    EXPECT_LE(stats.min[j], stats.quantiles[0][j]);
    EXPECT_LE(stats.quantiles[2][j], stats.max[j]);
    EXPECT_GT(stats.es[0][j], stats.var[0][j]);
  }
}

TEST(RiskClosedFormTest, ExpectedPnLIsZeroForRandomPortfolios) {
  // E[PnL] = e^{-rT} E[SC] - V0 = 0 under the risk-neutral drift, whatever
  // the positions, the correlation or the pairing of paths. With antithetic
  // paths the SE below is an upper bound.
  const int64_t issuers = 8, columns = 40;
  Market market = MakeMarket({}, {}, kRate, kMaturity);
  for (int64_t i = 0; i < issuers; ++i) {
    market.spot.push_back(5.0 + 0.7 * static_cast<double>(i));
    market.volatility.push_back(0.1 + 0.1 * static_cast<double>(i));
  }
  const double discount = std::exp(-kRate * kMaturity);
  struct Variant {
    std::string name;
    bool correlated, antithetic;
  };
  auto engine = MakeEngine();
  for (const Variant& variant :
       {Variant{"independent", false, false}, Variant{"correlated", true, false},
        Variant{"antithetic correlated", true, true}}) {
    SCOPED_TRACE(variant.name);
    JobSpec spec =
        MakeSpec(market, kPaths, 11, ScenarioMatrix::Generated(issuers, columns, 12, 0.0f, 1.0f),
                 Output(false, true, false));
    if (variant.correlated) {
      spec.market.correlation_factor = Factor(Equicorrelation(issuers, 0.4), issuers);
    }
    spec.antithetic = variant.antithetic;
    const JobResult result = RunJob(*engine, spec);
    ASSERT_TRUE(result.status.ok()) << result.status;
    const ColumnStatistics& stats = result.statistics;
    for (int64_t j = 0; j < columns; ++j) {
      const size_t k = static_cast<size_t>(j);
      EXPECT_EQ(stats.v0[k], ReferenceV0(spec, j)) << "column " << j;
      const double pnl = discount * stats.mean[k] - stats.v0[k];
      const double error = discount * stats.stddev[k] / std::sqrt(static_cast<double>(kPaths));
      EXPECT_NEAR(pnl, 0.0, kSigmas * error) << "column " << j << " V0 " << stats.v0[k];
    }
  }
}

TEST(RiskClosedFormTest, NearlyPerfectlyCorrelatedPairActsAsOneIssuerOfDoubleWeight) {
  // Issuers 0 and 1: same spot and sigma, correlation 0.999. Weight w on
  // each is (to O(1 - rho), far below the SE) weight 2w on one of them.
  const double spot = 6.0, sigma = 0.3;
  Market market = MakeMarket({spot, spot, 9.0}, {sigma, sigma, 0.4}, kRate, kMaturity);
  market.correlation_factor = Factor({1.0, 0.999, 0.0,  //
                                      0.999, 1.0, 0.0,  //
                                      0.0, 0.0, 1.0},
                                     3);
  const float weight = 1.5f;
  StatisticsSelection selection = RiskSelection();
  selection.quantiles.clear();
  auto engine = MakeEngine();
  const JobResult result =
      RunJob(*engine, MakeSpec(market, kPaths, 21,
                               InlineScenarios(3, {{weight, weight, 0.0f}, {0.0f, 0.0f, weight}}),
                               StatisticsOutput(selection, false, true)));
  ASSERT_TRUE(result.status.ok()) << result.status;
  // The lognormal correlation of the prices: (e^{rho s^2} - 1) / (e^{s^2} - 1) = 0.99895.
  const double price_correlation = [&] {
    std::vector<double> a(result.st.begin(), result.st.begin() + kPaths);
    std::vector<double> b(result.st.begin() + kPaths, result.st.begin() + 2 * kPaths);
    return SampleCorrelation(a, b);
  }();
  EXPECT_GT(price_correlation, 0.99);
  EXPECT_LT(price_correlation, 1.0);
  {
    SCOPED_TRACE("the pair");
    ExpectLognormalRisk(result.statistics, 0, selection,
                        LognormalPosition{2.0 * weight * spot, sigma});
  }
  {
    SCOPED_TRACE("the independent issuer");
    ExpectLognormalRisk(result.statistics, 1, selection, LognormalPosition{weight * 9.0, 0.4});
  }
}

}  // namespace
}  // namespace pricer
