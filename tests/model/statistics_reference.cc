#include "tests/model/statistics_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace pricer {
namespace {

// h = (n - 1) q of the documented quantile, and its lower rank floor(h).
double RankOf(size_t n, double q) { return static_cast<double>(n - 1) * q; }
size_t LowRank(size_t n, double q) { return static_cast<size_t>(std::floor(RankOf(n, q))); }

}  // namespace

double ReferenceQuantile(const std::vector<float>& sorted, double q) {
  const size_t n = sorted.size();
  const double h = RankOf(n, q);
  const size_t k = LowRank(n, q);
  if (k >= n - 1) return sorted.back();
  const double low = sorted[k];
  const double high = sorted[k + 1];
  return low + (h - static_cast<double>(k)) * (high - low);
}

double ReferenceTailMean(const std::vector<float>& sorted, double level) {
  const size_t k = LowRank(sorted.size(), level) + 1;
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += sorted[i];
  return sum / static_cast<double>(k);
}

ReferenceMoments ReferenceMomentsOf(const std::vector<float>& values) {
  long double sum = 0;
  for (const float v : values) sum += v;
  const long double n = static_cast<long double>(values.size());
  const long double mean = sum / n;
  long double squares = 0;
  for (const float v : values) squares += (v - mean) * (v - mean);
  ReferenceMoments r;
  r.mean = static_cast<double>(mean);
  r.stddev = values.size() > 1 ? static_cast<double>(std::sqrt(squares / (n - 1))) : 0.0;
  return r;
}

void ExpectMomentsMatch(const ColumnStatistics& stats, int64_t column,
                        const std::vector<float>& values, double relative) {
  const ReferenceMoments r = ReferenceMomentsOf(values);
  const size_t k = static_cast<size_t>(column);
  EXPECT_NEAR(stats.mean[k], r.mean, relative * std::fabs(r.mean) + 1e-300) << "column " << column;
  EXPECT_NEAR(stats.stddev[k], r.stddev, relative * r.stddev + 1e-300) << "column " << column;
  EXPECT_EQ(stats.min[k], *std::min_element(values.begin(), values.end())) << "column " << column;
  EXPECT_EQ(stats.max[k], *std::max_element(values.begin(), values.end())) << "column " << column;
}

void ExpectRiskMatches(const ColumnStatistics& stats, int64_t column,
                       const StatisticsSelection& selection, std::vector<float> values, double v0,
                       double discount) {
  std::sort(values.begin(), values.end());
  const size_t k = static_cast<size_t>(column);
  EXPECT_EQ(stats.v0[k], v0) << "column " << column;
  ASSERT_EQ(stats.quantiles.size(), selection.quantiles.size());
  ASSERT_EQ(stats.var.size(), selection.var.size());
  ASSERT_EQ(stats.es.size(), selection.es.size());
  for (size_t l = 0; l < selection.quantiles.size(); ++l) {
    EXPECT_EQ(stats.quantiles[l][k], ReferenceQuantile(values, selection.quantiles[l]))
        << "column " << column << " quantile " << selection.quantiles[l];
  }
  for (size_t l = 0; l < selection.var.size(); ++l) {
    EXPECT_EQ(stats.var[l][k], v0 - discount * ReferenceQuantile(values, 1 - selection.var[l]))
        << "column " << column << " VaR " << selection.var[l];
  }
  for (size_t l = 0; l < selection.es.size(); ++l) {
    const double tail = ReferenceTailMean(values, 1 - selection.es[l]);
    const double scale = std::fabs(v0) + discount * std::fabs(tail);
    EXPECT_NEAR(stats.es[l][k], v0 - discount * tail, 1e-12 * scale + 1e-300)
        << "column " << column << " ES " << selection.es[l];
  }
}

std::vector<float> LognormalColumn(int64_t rows, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> z;
  std::vector<float> x(static_cast<size_t>(rows));
  for (float& v : x) v = static_cast<float>(1'000 * std::exp(-0.02 + 0.2 * z(generator)));
  return x;
}

std::vector<float> SmallestFirst(std::vector<float> values, size_t count) {
  std::vector<float> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const float threshold = sorted[count];
  std::stable_partition(values.begin(), values.end(),
                        [threshold](float v) { return v < threshold; });
  return values;
}

std::vector<float> TiedAtTheQuantile(std::vector<float> values, double level) {
  std::vector<float> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const size_t low = LowRank(sorted.size(), level);
  for (float& v : values) {
    if (v == sorted[low + 1] || v == sorted[low + 2]) v = sorted[low];
  }
  return values;
}

std::vector<float> TiesApart(std::vector<float> values) {
  std::set<float> seen;
  for (float& v : values) {
    if (!seen.insert(v).second) v = std::nextafter(v, INFINITY);
  }
  return values;
}

}  // namespace pricer
