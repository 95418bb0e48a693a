#include "server/engine/column_statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace pricer {
namespace {

struct Reference {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

// Two-pass statistics in long double, from the float values.
Reference ReferenceStatistics(const std::vector<float>& values) {
  Reference r;
  long double sum = 0;
  r.min = r.max = values[0];
  for (const float v : values) {
    sum += v;
    r.min = std::min<double>(r.min, v);
    r.max = std::max<double>(r.max, v);
  }
  const long double mean = sum / static_cast<long double>(values.size());
  long double squares = 0;
  for (const float v : values) squares += (v - mean) * (v - mean);
  r.mean = static_cast<double>(mean);
  r.stddev =
      values.size() > 1 ? static_cast<double>(std::sqrt(squares / (values.size() - 1))) : 0.0;
  return r;
}

std::vector<float> Column(size_t rows, double center, double spread, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> noise(-spread, spread);
  std::vector<float> values(rows);
  for (float& v : values) v = static_cast<float>(center + noise(generator));
  return values;
}

void ExpectMatches(const ColumnStatistics& stats, int64_t column, const std::vector<float>& values,
                   double relative) {
  const Reference r = ReferenceStatistics(values);
  EXPECT_NEAR(stats.mean[column], r.mean, relative * std::fabs(r.mean) + 1e-300)
      << "column " << column;
  EXPECT_NEAR(stats.stddev[column], r.stddev, relative * r.stddev + 1e-300) << "column " << column;
  EXPECT_EQ(stats.min[column], r.min) << "column " << column;
  EXPECT_EQ(stats.max[column], r.max) << "column " << column;
}

TEST(ColumnStatisticsTest, MatchesFloat64Recomputation) {
  const std::vector<std::vector<float>> columns = {
      Column(1000, 0.0, 1.0, 1), Column(4097, -50.0, 10.0, 2), Column(2, 3.0, 1.0, 3),
      Column(100000, 7.5, 2.5, 4), Column(333, 1e-3, 1e-4, 5)};
  ColumnStatistics stats;
  stats.Resize(static_cast<int64_t>(columns.size()));
  // Set out of order: each column lands in its own slot.
  for (size_t j = columns.size(); j-- > 0;) {
    stats.SetColumn(static_cast<int64_t>(j), columns[j].data(),
                    static_cast<int64_t>(columns[j].size()));
  }
  ASSERT_EQ(stats.columns(), static_cast<int64_t>(columns.size()));
  for (size_t j = 0; j < columns.size(); ++j) {
    ExpectMatches(stats, static_cast<int64_t>(j), columns[j], 1e-12);
  }
}

TEST(ColumnStatisticsTest, LargeMeanWithTinySpreadKeepsItsVariance) {
  // Values 1e4 +- 0.01: the float grid is ~1e-3 there, the variance ~3e-5,
  // and E[x^2] - E[x]^2 cancels 13 of double's 16 digits.
  const std::vector<float> values = Column(100000, 1e4, 1e-2, 6);
  ColumnStatistics stats;
  stats.Resize(1);
  stats.SetColumn(0, values.data(), static_cast<int64_t>(values.size()));
  ExpectMatches(stats, 0, values, 1e-9);

  // The test can tell: the one-pass formula in double misses this tolerance.
  double sum = 0, sum_squares = 0;
  for (const float v : values) {
    sum += v;
    sum_squares += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(values.size());
  const double naive = std::sqrt(std::max(0.0, (sum_squares - sum * sum / n) / (n - 1)));
  const double exact = ReferenceStatistics(values).stddev;
  EXPECT_GT(std::fabs(naive - exact), 1e-9 * exact);
}

TEST(ColumnStatisticsTest, ConstantColumnHasZeroStddev) {
  const std::vector<float> values(1000, 0.1f);
  ColumnStatistics stats;
  stats.Resize(1);
  stats.SetColumn(0, values.data(), 1000);
  EXPECT_EQ(stats.stddev[0], 0.0);
  EXPECT_EQ(stats.mean[0], static_cast<double>(0.1f));
}

TEST(ColumnStatisticsTest, SingleRowHasZeroStddev) {
  const float value = -3.25f;
  ColumnStatistics stats;
  stats.Resize(1);
  stats.SetColumn(0, &value, 1);
  EXPECT_EQ(stats.mean[0], -3.25);
  EXPECT_EQ(stats.stddev[0], 0.0);
  EXPECT_EQ(stats.min[0], -3.25);
  EXPECT_EQ(stats.max[0], -3.25);
}

TEST(ColumnStatisticsTest, AppendRangeCopiesTheChosenColumns) {
  ColumnStatistics all;
  all.Resize(5);
  std::vector<std::vector<float>> columns;
  for (uint64_t j = 0; j < 5; ++j) {
    columns.push_back(Column(50, static_cast<double>(j), 1.0, 10 + j));
    all.SetColumn(static_cast<int64_t>(j), columns.back().data(), 50);
  }
  ColumnStatistics some;
  some.AppendRange(all, 1, 3);
  some.AppendRange(all, 0, 1);
  ASSERT_EQ(some.columns(), 4);
  const int64_t from[] = {1, 2, 3, 0};
  for (int64_t k = 0; k < 4; ++k) {
    EXPECT_EQ(some.mean[k], all.mean[from[k]]);
    EXPECT_EQ(some.stddev[k], all.stddev[from[k]]);
    EXPECT_EQ(some.min[k], all.min[from[k]]);
    EXPECT_EQ(some.max[k], all.max[from[k]]);
    ExpectMatches(some, k, columns[static_cast<size_t>(from[k])], 1e-12);
  }
}

}  // namespace
}  // namespace pricer
