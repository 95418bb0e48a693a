// The risk statistics of the engine with the cpu backend against the closed
// forms of the lognormal model, the risk-neutral identity E[PnL] = 0, the
// requested correlation of the shocks and the antithetic pairing.
//
// Tolerance rule: an estimate from P paths must lie within 4 of its
// asymptotic standard errors (SE) of the closed form, with
//   mean      SE = sd / sqrt(P)
//   stddev    SE = sd sqrt((kurtosis - 1) / (4 P)), the lognormal kurtosis
//             e^{4 s^2} + 2 e^{3 s^2} + 3 e^{2 s^2} - 3 (s = sigma sqrt(T))
//   quantile  SE = sqrt(q (1 - q) / P) / f(x_q), f the lognormal density
//   VaR_a     SE = e^{-rT} SE(quantile of level 1 - a)
//   ES_a      SE = e^{-rT} sqrt((Var(X | X <= x_b) + (1 - b) (x_b - E[X | X <= x_b])^2)
//             / (b P)) with b = 1 - a, the SE of a tail mean beyond an
//             estimated quantile (tail moments in closed form)
//   corr rho  SE = (1 - rho^2) / sqrt(P)
// The seeds are fixed, so each test is deterministic; a seed drawn at random
// would fail a 4-SE check with probability 6e-5. Float32 rounding (~1e-7
// relative) is far below every SE here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "server/model/correlation.h"
#include "server/model/counter_rng.h"
#include "server/scheduler/engine.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {
namespace {

constexpr int64_t kPaths = 200000;
constexpr double kRate = 0.03, kMaturity = 1.5;
constexpr double kSigmas = 4.0;  // the tolerance, in standard errors

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }
double NormalDensity(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
}
// Phi^{-1}(p) by bisection, to double precision.
double NormalQuantile(double p) {
  double low = -40, high = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (low + high);
    (NormalCdf(mid) < p ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

// A position of weight w in one issuer: its value at T is
// X = w S0 exp((r - sigma^2/2) T + sigma sqrt(T) Z), lognormal.
struct LognormalPosition {
  double value = 0;  // today's value w S0
  double sigma = 0;

  double s() const { return sigma * std::sqrt(kMaturity); }
  double m() const { return (kRate - 0.5 * sigma * sigma) * kMaturity; }
  double Mean() const { return value * std::exp(kRate * kMaturity); }
  double Stddev() const { return Mean() * std::sqrt(std::expm1(s() * s())); }
  double Quantile(double q) const { return value * std::exp(m() + s() * NormalQuantile(q)); }
  double VaR(double a) const {
    return value * (1 - std::exp(-0.5 * s() * s() + s() * NormalQuantile(1 - a)));
  }
  double ES(double a) const {
    return value * (1 - NormalCdf(NormalQuantile(1 - a) - s()) / (1 - a));
  }

  double MeanError() const { return Stddev() / std::sqrt(static_cast<double>(kPaths)); }
  double StddevError() const {
    const double v = s() * s();
    const double kurtosis = std::exp(4 * v) + 2 * std::exp(3 * v) + 3 * std::exp(2 * v) - 3;
    return Stddev() * std::sqrt((kurtosis - 1) / (4.0 * kPaths));
  }
  double QuantileError(double q) const {
    const double density = NormalDensity(NormalQuantile(q)) / (Quantile(q) * s());
    return std::sqrt(q * (1 - q) / kPaths) / density;
  }
  double VaRError(double a) const { return std::exp(-kRate * kMaturity) * QuantileError(1 - a); }
  double ESError(double a) const {
    const double b = 1 - a, z = NormalQuantile(b), x = Quantile(b);
    const double tail_mean = Mean() * NormalCdf(z - s()) / b;
    const double tail_square =
        value * value * std::exp(2 * m() + 2 * s() * s()) * NormalCdf(z - 2 * s()) / b;
    const double tail_variance = tail_square - tail_mean * tail_mean;
    return std::exp(-kRate * kMaturity) *
           std::sqrt((tail_variance + (1 - b) * (x - tail_mean) * (x - tail_mean)) / (b * kPaths));
  }
};

// Mean, stddev, min, max, the quantiles 5%, 50%, 95%, VaR and ES at 99% and
// 97.5%.
StatisticsSelection RiskSelection() {
  StatisticsSelection s = StatisticsSelection::Basic();
  s.quantiles = {0.05, 0.5, 0.95};
  s.var = {0.99, 0.975};
  s.es = {0.99, 0.975};
  return s;
}

OutputSelection StatisticsOutput(StatisticsSelection statistics, bool full = false,
                                 bool terminal_prices = false) {
  OutputSelection output = Output(full, false, terminal_prices);
  output.statistics = std::move(statistics);
  return output;
}

// An inline N x M scenario matrix from its columns.
ScenarioMatrix InlineScenarios(int64_t issuers, const std::vector<std::vector<float>>& columns) {
  auto values = std::make_shared<std::vector<float>>();
  for (const std::vector<float>& column : columns) {
    EXPECT_EQ(static_cast<int64_t>(column.size()), issuers);
    values->insert(values->end(), column.begin(), column.end());
  }
  return ScenarioMatrix::Inline(issuers, static_cast<int64_t>(columns.size()), values);
}

// Every issuer correlated `rho` with every other.
std::vector<double> Equicorrelation(int64_t n, double rho) {
  std::vector<double> c(static_cast<size_t>(n * n), rho);
  for (int64_t i = 0; i < n; ++i) c[static_cast<size_t>(i * n + i)] = 1.0;
  return c;
}

std::vector<float> Factor(const std::vector<double>& correlation, int64_t n) {
  absl::StatusOr<std::vector<float>> factor = CholeskyFactor(correlation, n);
  EXPECT_TRUE(factor.ok()) << factor.status();
  return factor.ok() ? *factor : std::vector<float>{};
}

// The shocks x[p, i] recovered from ST: (log(ST / S0) - drift) / diffusion,
// with the float32 constants the backend uses.
std::vector<double> RecoveredShocks(const JobResult& result, const Market& market, int64_t i) {
  const double sigma = market.volatility[static_cast<size_t>(i)];
  const double spot = static_cast<float>(market.spot[static_cast<size_t>(i)]);
  const double drift = static_cast<float>((market.rate - 0.5 * sigma * sigma) * market.maturity);
  const double diffusion = static_cast<float>(sigma * std::sqrt(market.maturity));
  std::vector<double> x(static_cast<size_t>(result.paths));
  for (int64_t p = 0; p < result.paths; ++p) {
    x[static_cast<size_t>(p)] = (std::log(result.St(p, i) / spot) - drift) / diffusion;
  }
  return x;
}

double SampleMean(const std::vector<double>& x) {
  double sum = 0;
  for (const double v : x) sum += v;
  return sum / static_cast<double>(x.size());
}

double SampleCorrelation(const std::vector<double>& x, const std::vector<double>& y) {
  const double mx = SampleMean(x), my = SampleMean(y);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t p = 0; p < x.size(); ++p) {
    sxy += (x[p] - mx) * (y[p] - my);
    sxx += (x[p] - mx) * (x[p] - mx);
    syy += (y[p] - my) * (y[p] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

// Expects mean, stddev, VaR and ES of column k to match `position`.
void ExpectLognormalRisk(const ColumnStatistics& stats, size_t k,
                         const StatisticsSelection& selection, const LognormalPosition& position) {
  EXPECT_NEAR(stats.mean[k], position.Mean(), kSigmas * position.MeanError()) << "mean";
  EXPECT_NEAR(stats.stddev[k], position.Stddev(), kSigmas * position.StddevError()) << "stddev";
  for (size_t l = 0; l < selection.var.size(); ++l) {
    const double a = selection.var[l];
    EXPECT_NEAR(stats.var[l][k], position.VaR(a), kSigmas * position.VaRError(a)) << "VaR " << a;
  }
  for (size_t l = 0; l < selection.es.size(); ++l) {
    const double a = selection.es[l];
    EXPECT_NEAR(stats.es[l][k], position.ES(a), kSigmas * position.ESError(a)) << "ES " << a;
  }
}

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
