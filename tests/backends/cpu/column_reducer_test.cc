#include "server/backends/cpu/column_reducer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/model/statistics_reference.h"

namespace pricer {
namespace {

// exp(-r T) with r = 2%, T = 1.5 years.
const double kDiscount = std::exp(-0.02 * 1.5);

std::vector<float> Column(size_t rows, double center, double spread, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> noise(-spread, spread);
  std::vector<float> values(rows);
  for (float& v : values) v = static_cast<float>(center + noise(generator));
  return values;
}

// Values drawn from a few levels only: ties everywhere, in the tail too.
std::vector<float> TiedColumn(size_t rows, const std::vector<float>& levels, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<size_t> pick(0, levels.size() - 1);
  std::vector<float> values(rows);
  for (float& v : values) v = levels[pick(generator)];
  return values;
}

// Everything a column can be asked for.
StatisticsSelection Everything() {
  StatisticsSelection s = StatisticsSelection::Basic();
  s.quantiles = {0.0, 0.01, 0.5, 0.975, 1.0};
  s.var = {0.99, 0.975, 0.5};
  s.es = {0.99, 0.975};
  return s;
}

// Lower-tail levels only: on columns of 2048 values or more the reducer
// selects from a copy of the tail instead of the whole column.
StatisticsSelection TailOnly() {
  StatisticsSelection s;
  s.quantiles = {0.0, 0.01};
  s.var = {0.99, 0.975};
  s.es = {0.99, 0.975};
  return s;
}

// The statistics of one column, through a fresh reducer.
ColumnStatistics Reduce(const StatisticsSelection& selection, const std::vector<float>& values,
                        double v0) {
  ColumnStatistics stats;
  stats.Resize(selection, 1);
  ColumnReducer reducer(selection, static_cast<int64_t>(values.size()), kDiscount);
  reducer.Reduce(values.data(), v0, 0, &stats);
  return stats;
}

TEST(ColumnStatisticsTest, MomentsMatchFloat64Recomputation) {
  const std::vector<std::vector<float>> columns = {
      Column(1000, 0.0, 1.0, 1), Column(4097, -50.0, 10.0, 2), Column(2, 3.0, 1.0, 3),
      Column(100000, 7.5, 2.5, 4), Column(333, 1e-3, 1e-4, 5)};
  for (size_t j = 0; j < columns.size(); ++j) {
    SCOPED_TRACE("P=" + std::to_string(columns[j].size()));
    const ColumnStatistics stats = Reduce(StatisticsSelection::Basic(), columns[j], 1.25);
    ASSERT_EQ(stats.columns(), 1);
    EXPECT_EQ(stats.v0[0], 1.25);
    ExpectMomentsMatch(stats, 0, columns[j], 1e-12);
  }
}

TEST(ColumnStatisticsTest, LargeMeanWithTinySpreadKeepsItsVariance) {
  // Values 1e4 +- 0.01: the float grid is ~1e-3 there, the variance ~3e-5,
  // and E[x^2] - E[x]^2 cancels 13 of double's 16 digits.
  const std::vector<float> values = Column(100000, 1e4, 1e-2, 6);
  ExpectMomentsMatch(Reduce(StatisticsSelection::Basic(), values, 0), 0, values, 1e-9);

  // The test can tell: the one-pass formula in double misses this tolerance.
  double sum = 0, sum_squares = 0;
  for (const float v : values) {
    sum += v;
    sum_squares += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(values.size());
  const double naive = std::sqrt(std::max(0.0, (sum_squares - sum * sum / n) / (n - 1)));
  const double exact = ReferenceMomentsOf(values).stddev;
  EXPECT_GT(std::fabs(naive - exact), 1e-9 * exact);
}

TEST(ColumnStatisticsTest, ConstantColumnHasZeroStddevAndConstantQuantiles) {
  const std::vector<float> values(5000, 0.1f);
  const StatisticsSelection all = Everything();
  const ColumnStatistics stats = Reduce(all, values, 0.5);
  EXPECT_EQ(stats.stddev[0], 0.0);
  EXPECT_EQ(stats.mean[0], static_cast<double>(0.1f));
  for (size_t l = 0; l < all.quantiles.size(); ++l) {
    EXPECT_EQ(stats.quantiles[l][0], static_cast<double>(0.1f));
  }
  for (size_t l = 0; l < all.var.size(); ++l) {
    EXPECT_EQ(stats.var[l][0], 0.5 - kDiscount * static_cast<double>(0.1f));
  }
  for (size_t l = 0; l < all.es.size(); ++l) {
    EXPECT_NEAR(stats.es[l][0], 0.5 - kDiscount * static_cast<double>(0.1f), 1e-15);
  }
}

TEST(ColumnStatisticsTest, SingleRowIsEveryStatistic) {
  const std::vector<float> values = {-3.25f};
  const StatisticsSelection all = Everything();
  const ColumnStatistics stats = Reduce(all, values, 2.0);
  EXPECT_EQ(stats.mean[0], -3.25);
  EXPECT_EQ(stats.stddev[0], 0.0);
  EXPECT_EQ(stats.min[0], -3.25);
  EXPECT_EQ(stats.max[0], -3.25);
  for (size_t l = 0; l < all.quantiles.size(); ++l) EXPECT_EQ(stats.quantiles[l][0], -3.25);
  for (size_t l = 0; l < all.var.size(); ++l) EXPECT_EQ(stats.var[l][0], 2.0 + kDiscount * 3.25);
  for (size_t l = 0; l < all.es.size(); ++l) EXPECT_EQ(stats.es[l][0], 2.0 + kDiscount * 3.25);
}

TEST(ColumnStatisticsTest, QuantilesFollowTheLinearRuleOnSmallColumns) {
  const StatisticsSelection all = Everything();
  for (const size_t rows : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{100}}) {
    SCOPED_TRACE("P=" + std::to_string(rows));
    const std::vector<float> values = Column(rows, 5.0, 2.0, 20 + rows);
    const ColumnStatistics stats = Reduce(all, values, 4.0);
    ExpectMomentsMatch(stats, 0, values, 1e-12);
    ExpectRiskMatches(stats, 0, all, values, 4.0, kDiscount);
  }
  // P = 2 by hand: h = q, so the quantile is x_(0) + q (x_(1) - x_(0)).
  const ColumnStatistics two = Reduce(all, {3.0f, 1.0f}, 0.0);
  EXPECT_EQ(two.quantiles[0][0], 1.0);
  EXPECT_EQ(two.quantiles[1][0], 1.0 + 0.01 * 2.0);
  EXPECT_EQ(two.quantiles[2][0], 2.0);
  EXPECT_EQ(two.quantiles[4][0], 3.0);
  // ES at 0.99: the values <= 1.02, i.e. x_(0) alone.
  EXPECT_EQ(two.es[0][0], -kDiscount * 1.0);
}

TEST(ColumnStatisticsTest, MedianOnLargeColumnsUsesEveryValue) {
  // A median or upper quantile forces the selection over the whole column.
  const StatisticsSelection all = Everything();
  for (const size_t rows : {size_t{2048}, size_t{4097}, size_t{200000}}) {
    SCOPED_TRACE("P=" + std::to_string(rows));
    const std::vector<float> values = Column(rows, 100.0, 30.0, 30 + rows);
    const ColumnStatistics stats = Reduce(all, values, 101.0);
    ExpectMomentsMatch(stats, 0, values, 1e-12);
    ExpectRiskMatches(stats, 0, all, values, 101.0, kDiscount);
  }
}

TEST(ColumnStatisticsTest, LowerTailLevelsOnLargeColumnsMatchAFullSort) {
  StatisticsSelection tail = TailOnly();
  for (const size_t rows : {size_t{2048}, size_t{4096}, size_t{65537}, size_t{200000}}) {
    SCOPED_TRACE("P=" + std::to_string(rows));
    const std::vector<float> values = Column(rows, 100.0, 30.0, 40 + rows);
    ExpectRiskMatches(Reduce(tail, values, 99.0), 0, tail, values, 99.0, kDiscount);
  }
  // With the moments as well.
  tail.mean = tail.stddev = tail.min = tail.max = true;
  const std::vector<float> values = Column(50000, -2.0, 1.0, 50);
  const ColumnStatistics stats = Reduce(tail, values, -1.0);
  ExpectMomentsMatch(stats, 0, values, 1e-12);
  ExpectRiskMatches(stats, 0, tail, values, -1.0, kDiscount);
}

TEST(ColumnStatisticsTest, TiesAreCountedOnceEachInQuantilesAndShortfall) {
  // Five levels (and 2% of the column equal to the lowest one) put ties on
  // every needed rank: ES averages every value <= the quantile, ties included.
  for (const StatisticsSelection& selection : {Everything(), TailOnly()}) {
    for (const size_t rows : {size_t{7}, size_t{3000}, size_t{100000}}) {
      SCOPED_TRACE("P=" + std::to_string(rows) + " levels " +
                   std::to_string(selection.quantiles.size()));
      const std::vector<float> values =
          TiedColumn(rows, {0.5f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f, 3.5f, 4.0f}, 60 + rows);
      ExpectRiskMatches(Reduce(selection, values, 2.0), 0, selection, values, 2.0, kDiscount);
    }
    std::vector<float> mostly_ones(20000, 1.0f);
    for (size_t p = 0; p < mostly_ones.size(); p += 50) mostly_ones[p] = 0.25f;
    ExpectRiskMatches(Reduce(selection, mostly_ones, 1.0), 0, selection, mostly_ones, 1.0,
                      kDiscount);
  }
}

TEST(ColumnStatisticsTest, ShortfallsTailKeepsItsSizeWhenValuesTieAtTheQuantile) {
  const StatisticsSelection tail = TailOnly();
  for (const size_t rows : {size_t{1000}, size_t{10'000}}) {
    std::vector<float> tied = Column(rows, 100.0, 30.0, rows);
    for (double a : tail.es) tied = TiedAtTheQuantile(tied, 1 - a);
    const ColumnStatistics stats = Reduce(tail, tied, 100.0);
    ExpectRiskMatches(stats, 0, tail, tied, 100.0, kDiscount);
    const ColumnStatistics apart = Reduce(tail, TiesApart(tied), 100.0);  // a value's weight: 1e-3
    for (size_t l = 0; l < tail.es.size(); ++l) EXPECT_NEAR(stats.es[l][0], apart.es[l][0], 1e-4);
  }
}

TEST(ColumnStatisticsTest, LowerTailFarFromTheSampleIsStillExact) {
  // The tail path guesses its threshold from the column's first 256 values;
  // these columns hide the tail from that sample or mislead it.
  const size_t rows = 100000;
  const StatisticsSelection tail = TailOnly();

  // A few extreme losses after the sampled rows.
  std::vector<float> crashes = Column(rows, 100.0, 5.0, 70);
  for (size_t c = 0; c < 40; ++c) crashes[256 + c * 997] = -1e6f * static_cast<float>(c + 1);
  ExpectRiskMatches(Reduce(tail, crashes, 100.0), 0, tail, crashes, 100.0, kDiscount);

  // The sampled rows are the lowest values of the column: the threshold
  // from the sample keeps too few values and the reducer must use them all.
  std::vector<float> low_sample = Column(rows, 100.0, 5.0, 71);
  for (size_t s = 0; s < 256; ++s) low_sample[s] = -1000.0f - static_cast<float>(s);
  ExpectRiskMatches(Reduce(tail, low_sample, 100.0), 0, tail, low_sample, 100.0, kDiscount);

  // The sampled rows are the highest: the threshold keeps nearly everything.
  std::vector<float> high_sample = Column(rows, 100.0, 5.0, 72);
  for (size_t s = 0; s < 256; ++s) high_sample[s] = 1e6f + static_cast<float>(s);
  ExpectRiskMatches(Reduce(tail, high_sample, 100.0), 0, tail, high_sample, 100.0, kDiscount);

  // A tail of many equal values straddling the threshold.
  std::vector<float> floor_ties = Column(rows, 100.0, 5.0, 73);
  for (size_t p = 0; p < rows; p += 20) floor_ties[p] = 90.0f;
  ExpectRiskMatches(Reduce(tail, floor_ties, 100.0), 0, tail, floor_ties, 100.0, kDiscount);
}

TEST(ColumnStatisticsTest, WindowsAwayFromTheLowerTailMatchAFullSort) {
  // A median, upper quantiles, and ES and VaR at 50%: windows bounded on
  // both sides, so the values under them are counted and summed in the pass.
  StatisticsSelection middle;
  middle.quantiles = {0.5};
  StatisticsSelection upper;
  upper.quantiles = {0.95, 0.975};
  StatisticsSelection central_risk;
  central_risk.var = {0.5, 0.52};
  central_risk.es = {0.5};
  for (const StatisticsSelection& selection : {middle, upper, central_risk}) {
    for (const size_t rows : {size_t{2048}, size_t{10001}, size_t{200000}}) {
      SCOPED_TRACE("P=" + std::to_string(rows));
      const std::vector<float> values = Column(rows, 50.0, 20.0, 90 + rows);
      ExpectRiskMatches(Reduce(selection, values, 49.0), 0, selection, values, 49.0, kDiscount);
    }
  }
  // Samples that mislead a two-sided window: the retry and the whole column.
  const size_t rows = 100000;
  std::vector<float> low_sample = Column(rows, 100.0, 5.0, 95);
  for (size_t s = 0; s < 256; ++s) low_sample[s] = -1000.0f - static_cast<float>(s);
  std::vector<float> shifted = Column(rows, 100.0, 5.0, 96);
  for (size_t s = 0; s < 128; ++s) shifted[s] = 1e4f;
  for (const std::vector<float>* values : {&low_sample, &shifted}) {
    for (const StatisticsSelection& selection : {middle, upper, central_risk}) {
      ExpectRiskMatches(Reduce(selection, *values, 100.0), 0, selection, *values, 100.0, kDiscount);
    }
  }
}

TEST(ColumnStatisticsTest, AvxAndPortableKernelsGiveTheSameBits) {
  // The lanes of the pass are fixed, so the AVX-512 and AVX2 code (where the
  // processor has them) and the portable code round alike; remainders of 16
  // included.
  StatisticsSelection stats_mode;
  stats_mode.mean = stats_mode.stddev = true;
  stats_mode.var = {0.99};
  stats_mode.es = {0.975};
  StatisticsSelection with_middle = Everything();
  with_middle.quantiles = {0.5};
  for (const StatisticsSelection& selection :
       {StatisticsSelection::Basic(), stats_mode, TailOnly(), Everything(), with_middle}) {
    for (const size_t rows : {size_t{1}, size_t{13}, size_t{2048}, size_t{10003}, size_t{65536}}) {
      SCOPED_TRACE("P=" + std::to_string(rows));
      const std::vector<float> values = Column(rows, 7.5, 2.0, 100 + rows);
      ColumnStatistics portable;
      portable.Resize(selection, 1);
      ColumnReducer(selection, static_cast<int64_t>(rows), kDiscount, ReducerKernel::kPortable)
          .Reduce(values.data(), 8.0, 0, &portable);
      // Each vector kernel this processor has (the others fall back to the
      // portable code).
      for (const ReducerKernel kernel :
           {ReducerKernel::kBest, ReducerKernel::kAvx2, ReducerKernel::kAvx512}) {
        SCOPED_TRACE("kernel " + std::to_string(static_cast<int>(kernel)));
        ColumnStatistics vector;
        vector.Resize(selection, 1);
        ColumnReducer(selection, static_cast<int64_t>(rows), kDiscount, kernel)
            .Reduce(values.data(), 8.0, 0, &vector);
        EXPECT_EQ(vector.mean, portable.mean);
        EXPECT_EQ(vector.stddev, portable.stddev);
        EXPECT_EQ(vector.min, portable.min);
        EXPECT_EQ(vector.max, portable.max);
        EXPECT_EQ(vector.quantiles, portable.quantiles);
        EXPECT_EQ(vector.var, portable.var);
        EXPECT_EQ(vector.es, portable.es);
      }
      ExpectRiskMatches(portable, 0, selection, values, 8.0, kDiscount);
    }
  }
}

TEST(ColumnStatisticsTest, OneReducerServesManyColumnsInAnyOrder) {
  // Scratch reused from column to column must not leak between them: a
  // column that needs the whole-column fallback between two that do not.
  const size_t rows = 100000;
  std::vector<std::vector<float>> columns = {Column(rows, 10.0, 3.0, 80),
                                             Column(rows, 10.0, 3.0, 81),
                                             TiedColumn(rows, {1.0f, 2.0f, 3.0f}, 82)};
  for (size_t s = 0; s < 256; ++s) columns[1][s] = -50.0f - static_cast<float>(s);
  for (const StatisticsSelection& base : {Everything(), TailOnly()}) {
    StatisticsSelection selection = base;
    selection.mean = selection.stddev = selection.min = selection.max = true;
    ColumnStatistics stats;
    stats.Resize(selection, 3);
    ColumnReducer reducer(selection, static_cast<int64_t>(rows), kDiscount);
    for (const int64_t k : {2, 0, 1}) {
      reducer.Reduce(columns[static_cast<size_t>(k)].data(), 10.0 + static_cast<double>(k), k,
                     &stats);
    }
    for (int64_t k = 0; k < 3; ++k) {
      SCOPED_TRACE("column " + std::to_string(k));
      ExpectMomentsMatch(stats, k, columns[static_cast<size_t>(k)], 1e-12);
      ExpectRiskMatches(stats, k, selection, columns[static_cast<size_t>(k)],
                        10.0 + static_cast<double>(k), kDiscount);
    }
  }
}

TEST(ColumnStatisticsTest, ValuesPerColumnCountsV0AndEveryLevel) {
  EXPECT_FALSE(StatisticsSelection{}.any());
  EXPECT_EQ(StatisticsSelection{}.values_per_column(), 0);
  EXPECT_TRUE(StatisticsSelection::Basic().any());
  EXPECT_EQ(StatisticsSelection::Basic().values_per_column(), 5);  // V0, mean, stddev, min, max
  StatisticsSelection es_only;
  es_only.es = {0.975};
  EXPECT_TRUE(es_only.any());
  EXPECT_EQ(es_only.values_per_column(), 2);
  StatisticsSelection min_only;
  min_only.min = true;
  EXPECT_EQ(min_only.values_per_column(), 2);
  EXPECT_EQ(Everything().values_per_column(), 1 + 4 + 5 + 3 + 2);

  // Resize makes room for exactly those values.
  for (const StatisticsSelection& selection :
       {StatisticsSelection::Basic(), es_only, min_only, Everything(), TailOnly()}) {
    ColumnStatistics stats;
    stats.Resize(selection, 7);
    EXPECT_EQ(stats.columns(), 7);
    EXPECT_EQ(stats.values(), 7 * selection.values_per_column());
    EXPECT_EQ(stats.mean.size(), selection.mean ? 7u : 0u);
    EXPECT_EQ(stats.min.size(), selection.min ? 7u : 0u);
    EXPECT_EQ(stats.quantiles.size(), selection.quantiles.size());
    EXPECT_EQ(stats.es.size(), selection.es.size());
  }
}

TEST(ColumnStatisticsTest, AppendRangeCopiesTheChosenColumns) {
  const StatisticsSelection all = Everything();
  ColumnStatistics whole;
  whole.Resize(all, 5);
  ColumnReducer reducer(all, 50, kDiscount);
  std::vector<std::vector<float>> columns;
  for (uint64_t j = 0; j < 5; ++j) {
    columns.push_back(Column(50, static_cast<double>(j), 1.0, 10 + j));
    reducer.Reduce(columns.back().data(), static_cast<double>(j) + 0.5, static_cast<int64_t>(j),
                   &whole);
  }
  ColumnStatistics some;
  some.AppendRange(whole, 1, 3);
  some.AppendRange(whole, 0, 1);
  ASSERT_EQ(some.columns(), 4);
  EXPECT_EQ(some.values(), 4 * all.values_per_column());
  const size_t from[] = {1, 2, 3, 0};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(some.v0[k], whole.v0[from[k]]);
    EXPECT_EQ(some.mean[k], whole.mean[from[k]]);
    EXPECT_EQ(some.stddev[k], whole.stddev[from[k]]);
    EXPECT_EQ(some.min[k], whole.min[from[k]]);
    EXPECT_EQ(some.max[k], whole.max[from[k]]);
    for (size_t l = 0; l < all.quantiles.size(); ++l) {
      EXPECT_EQ(some.quantiles[l][k], whole.quantiles[l][from[k]]);
    }
    for (size_t l = 0; l < all.var.size(); ++l) EXPECT_EQ(some.var[l][k], whole.var[l][from[k]]);
    for (size_t l = 0; l < all.es.size(); ++l) EXPECT_EQ(some.es[l][k], whole.es[l][from[k]]);
    ExpectMomentsMatch(some, static_cast<int64_t>(k), columns[from[k]], 1e-12);
    ExpectRiskMatches(some, static_cast<int64_t>(k), all, columns[from[k]],
                      static_cast<double>(from[k]) + 0.5, kDiscount);
  }
  // Unselected arrays stay empty when appended.
  ColumnStatistics basic;
  basic.Resize(StatisticsSelection::Basic(), 2);
  ColumnStatistics copy;
  copy.AppendRange(basic, 0, 2);
  EXPECT_EQ(copy.values(), 2 * 5);
  EXPECT_TRUE(copy.quantiles.empty());
  EXPECT_TRUE(copy.es.empty());
}

}  // namespace
}  // namespace pricer
