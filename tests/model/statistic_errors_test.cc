// ColumnErrors against closed forms: on large samples of known laws the
// standard errors must approach their asymptotic values, the intervals must
// sit on the order statistics the documented ranks give, and antithetic
// pairs must be counted as the units they are.
#include "server/model/statistic_errors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "server/model/statistics.h"
#include "tests/model/statistics_reference.h"

namespace pricer {
namespace {

constexpr double kPi = 3.14159265358979323846;

double NormalDensity(double x) { return std::exp(-x * x / 2) / std::sqrt(2 * kPi); }

std::vector<float> Normals(int64_t n, double sigma, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, sigma);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = static_cast<float>(normal(rng));
  return values;
}

// The statistics of `values` for `selection`, then their errors.
ColumnStatistics WithErrors(const StatisticsSelection& selection, const std::vector<float>& values,
                            bool antithetic) {
  ColumnStatistics stats;
  stats.Resize(selection, 1);
  const ReferenceMoments moments = ReferenceMomentsOf(values);
  if (selection.mean) stats.mean[0] = moments.mean;
  if (selection.stddev) stats.stddev[0] = moments.stddev;
  const int64_t n = static_cast<int64_t>(values.size());
  ColumnErrors errors(selection, n, /*discount=*/1.0, antithetic);
  errors.Compute(values.data(), 0, &stats);
  return stats;
}

TEST(ColumnErrors, NormalQuantileOfTheConfidence) {
  EXPECT_NEAR(ColumnErrors::NormalQuantile(0.95), 1.959963984540054, 1e-12);
  EXPECT_NEAR(ColumnErrors::NormalQuantile(0.99), 2.5758293035489004, 1e-12);
  EXPECT_NEAR(ColumnErrors::NormalQuantile(0.5), 0.6744897501960817, 1e-12);
}

// N(0, s^2), n = 400,000: se(mean) = s / sqrt(n), se(stddev) = s / sqrt(2 n),
// se(ES_a) = sqrt((Var(X | X <= q) + a (ES - q)^2) / (n (1 - a))).
TEST(ColumnErrors, StandardErrorsOfNormalSamplesMatchTheirClosedForms) {
  const int64_t n = 400'000;
  const double sigma = 3.0;
  const std::vector<float> values = Normals(n, sigma, 7);
  StatisticsSelection selection;
  selection.mean = selection.stddev = true;
  selection.es = {0.975};
  selection.errors = true;
  const ColumnStatistics stats = WithErrors(selection, values, false);
  EXPECT_NEAR(stats.mean_se[0] / (sigma / std::sqrt(n)), 1.0, 0.01);
  EXPECT_NEAR(stats.stddev_se[0] / (sigma / std::sqrt(2.0 * n)), 1.0, 0.02);
  const double p = 0.025, z = -ColumnErrors::NormalQuantile(1 - 2 * p);  // Phi(z) = p
  const double tail_mean = -NormalDensity(z) / p;                        // E[X | X <= z]
  const double tail_second = 1 - z * NormalDensity(z) / p;               // E[X^2 | X <= z]
  const double variance =
      tail_second - tail_mean * tail_mean + (1 - p) * std::pow(tail_mean - z, 2);
  EXPECT_NEAR(stats.es_se[0][0] / (sigma * std::sqrt(variance / (n * p))), 1.0, 0.03);
}

// Values 0..n-1 in a shuffled order: x_(r) = r, so the bounds are their
// ranks. N, the count under the estimate, is binomial with variance
// n q (1 - q) as estimated from the data: lower = floor(n q - z sd - 1/2),
// upper = ceil(n q + z sd - 1/2).
TEST(ColumnErrors, QuantileIntervalsSitOnTheDocumentedRanks) {
  const int64_t n = 10'000;
  std::vector<float> values(static_cast<size_t>(n));
  std::iota(values.begin(), values.end(), 0.0f);
  std::shuffle(values.begin(), values.end(), std::mt19937(3));
  StatisticsSelection selection;
  selection.quantiles = {0.05, 0.5};
  selection.var = {0.99};
  selection.errors = true;
  ColumnStatistics stats = WithErrors(selection, values, false);
  const double z = ColumnErrors::NormalQuantile(0.95);
  auto expect_ranks = [&](double q, double lower, double upper) {
    const double estimate = (n - 1) * q;            // x_(h) interpolated: h itself
    const double under = std::floor(estimate) + 1;  // values <= the estimate
    const double share = under / n;                 // the units' mean count
    const double sd = std::sqrt(share * (1 - share) * n / (n - 1.0) * n);
    EXPECT_EQ(lower, std::max(0.0, std::floor(n * q - z * sd - 0.5))) << q;
    EXPECT_EQ(upper, std::min(n - 1.0, std::ceil(n * q + z * sd - 0.5))) << q;
  };
  expect_ranks(0.05, stats.quantiles_lo[0][0], stats.quantiles_hi[0][0]);
  expect_ranks(0.5, stats.quantiles_lo[1][0], stats.quantiles_hi[1][0]);
  // VaR 0.99 with V0 = 0, discount 1: -quantile_0.01, bounds swapped.
  expect_ranks(0.01, -stats.var_hi[0][0], -stats.var_lo[0][0]);
}

// Pairs (x, -x), as antithetic paths of a linear payoff give: every pair's
// mean is 0, so the mean is known exactly, and exactly one value of each
// pair lies under the median, so its interval closes on the estimate.
// Counted as independent paths, both would have the usual errors.
TEST(ColumnErrors, AntitheticPairsAreTheUnits) {
  const int64_t n = 20'000;
  std::vector<float> values = Normals(n, 1.0, 11);
  for (int64_t p = 0; p + 1 < n; p += 2) values[p + 1] = -values[p];
  StatisticsSelection selection;
  selection.mean = true;
  selection.quantiles = {0.5};
  selection.errors = true;
  const ColumnStatistics pairs = WithErrors(selection, values, true);
  const ColumnStatistics paths = WithErrors(selection, values, false);
  EXPECT_EQ(pairs.mean_se[0], 0.0);
  EXPECT_NEAR(paths.mean_se[0] * std::sqrt(n), 1.0, 0.03);
  std::vector<float> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(pairs.quantiles_lo[0][0], sorted[n / 2 - 1]);
  EXPECT_EQ(pairs.quantiles_hi[0][0], sorted[n / 2]);
  EXPECT_GT(paths.quantiles_hi[0][0] - paths.quantiles_lo[0][0],
            50 * (sorted[n / 2] - sorted[n / 2 - 1]));
}

// An odd path count with antithetic pairs: the last path is a unit of its
// own; a single path has no error to estimate.
TEST(ColumnErrors, OddAndSinglePaths) {
  StatisticsSelection selection;
  selection.mean = selection.stddev = true;
  selection.var = {0.9};
  selection.errors = true;
  const ColumnStatistics odd = WithErrors(selection, {1, -1, 2, -2, 5}, true);
  // Units 0, 0, 5: their mean 5/3, sample variance 25/3, over 3 units.
  EXPECT_NEAR(odd.mean_se[0], std::sqrt(25.0 / 3 / 3), 1e-12);
  const ColumnStatistics one = WithErrors(selection, {4}, false);
  EXPECT_EQ(one.mean_se[0], 0.0);
  EXPECT_EQ(one.stddev_se[0], 0.0);
  EXPECT_EQ(one.var_lo[0][0], -4.0);
  EXPECT_EQ(one.var_hi[0][0], -4.0);
}

}  // namespace
}  // namespace pricer
