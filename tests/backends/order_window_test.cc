// The window arithmetic both backends share (server/model/order_window.h),
// on the cpu: its ranges against their definition, and the selection the
// cuda backend builds on it (sort the sample, bound the window, count under
// it, keep what is in it, sort the window alone, fall back when it misses),
// run here step by step on the host, against the cpu reducer and a full sort
// at the original example's P = 10,000 and at odd P.
#include "server/model/order_window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "server/backends/cpu/column_reducer.h"
#include "tests/model/statistics_reference.h"

namespace pricer {
namespace {

const double kDiscount = std::exp(-0.02 * 1.5);

// The example's statistics: VaR 0.99 and ES 0.975 (and the 1% quantile).
StatisticsSelection Tail() {
  StatisticsSelection s;
  s.quantiles = {0.01};
  s.var = {0.99};
  s.es = {0.975};
  return s;
}

TEST(NeededRanksTest, EachLevelsRanksOnceAscending) {
  StatisticsSelection s;
  s.quantiles = {0.5, 0.01};
  s.var = {0.99};  // the 0.01 quantile again
  s.es = {0.975};
  // h = 9,999 q: 0.01 -> 99.99 (99, 100); 0.5 -> 4,999.5 (4,999, 5,000);
  // 0.025 -> 249.975 (249, 250).
  EXPECT_EQ(NeededRanks(s, 10'000), (std::vector<int64_t>{99, 100, 249, 250, 4'999, 5'000}));
  // P = 10,001: h = 10,000 q falls on the ranks for the quantiles, but 1 -
  // 0.99 and 1 - 0.975 round above 0.01 and 0.025 in float64, so VaR and ES
  // interpolate (by about 1e-13) towards the next rank, which is needed too.
  EXPECT_EQ(NeededRanks(s, 10'001), (std::vector<int64_t>{100, 101, 250, 251, 5'000}));
  s.var.clear();
  s.es.clear();
  EXPECT_EQ(NeededRanks(s, 10'001), (std::vector<int64_t>{100, 5'000}));
  EXPECT_TRUE(NeededRanks(StatisticsSelection::Basic(), 10'000).empty());
  const RankSpan span = NeededSpan(s, 10'001);
  EXPECT_EQ(span.first, 100);
  EXPECT_EQ(span.last, 5'000);
  const RankSpan none = NeededSpan(StatisticsSelection::Basic(), 10'000);
  EXPECT_EQ(none.first, 0);
  EXPECT_EQ(none.last, 0);
}

TEST(SampleRangeTest, HoldsTheExpectedSampleRanksAndWidensOnTheRetry) {
  for (int64_t rows : {2'048, 4'097, 9'999, 10'000, 10'001, 1'000'000}) {
    for (double first_level : {0.0, 0.001, 0.01, 0.3, 0.5}) {
      for (double width : {0.0, 0.015, 0.2}) {
        const RankSpan span{static_cast<int64_t>(first_level * (rows - 1)),
                            static_cast<int64_t>(std::min(first_level + width, 1.0) * (rows - 1))};
        const SampleRange r0 = SampleRangeOf(span, rows, 0), r1 = SampleRangeOf(span, rows, 1);
        // Where a uniform sample puts the span, independently of the code.
        const double low = static_cast<double>(span.first) * kWindowSample / rows;
        const double high = static_cast<double>(span.last + 1) * kWindowSample / rows;
        EXPECT_LE(r0.lo + 3, low) << rows << " " << span.first;
        EXPECT_GE(r0.hi - 3, high) << rows << " " << span.last;
        EXPECT_LE(r1.lo, r0.lo - 13);
        EXPECT_GE(r1.hi, r0.hi + 13);
        EXPECT_EQ(r0.top(), std::min(r0.hi + 1, kWindowSample));
      }
    }
  }
  // The example: VaR 0.99 and ES 0.975 at P = 10,000 need ranks 99..250,
  // expected at sample ranks 2.5..6.4: open below, capped at 17 (6.43 +
  // 3 x 2.50 + 3 = 16.93, rounded up).
  const SampleRange example = SampleRangeOf(NeededSpan(Tail(), 10'000), 10'000, 0);
  EXPECT_FALSE(example.bounded());
  EXPECT_TRUE(example.capped());
  EXPECT_EQ(example.hi, 17);
}

TEST(WindowFromSampleTest, TailsAndMediansFromTheSampleWideSpansAndShortColumnsWhole) {
  EXPECT_TRUE(WindowFromSample(NeededSpan(Tail(), 10'000), 10'000));
  EXPECT_TRUE(WindowFromSample(NeededSpan(Tail(), 9'999), 9'999));
  StatisticsSelection median;
  median.quantiles = {0.5};
  EXPECT_TRUE(WindowFromSample(NeededSpan(median, 10'000), 10'000));
  StatisticsSelection wide = Tail();
  wide.quantiles.push_back(0.5);  // ranks 99..5,000: half the column
  EXPECT_FALSE(WindowFromSample(NeededSpan(wide, 10'000), 10'000));
  EXPECT_FALSE(WindowFromSample(NeededSpan(Tail(), 2'047), 2'047));
  EXPECT_TRUE(WindowFromSample(NeededSpan(Tail(), 2'048), 2'048));
}

TEST(WindowCoversTest, EveryNeededRankInside) {
  const RankSpan span{99, 250};
  EXPECT_TRUE(WindowCovers(span, 0, 251));
  EXPECT_TRUE(WindowCovers(span, 99, 152));
  EXPECT_FALSE(WindowCovers(span, 99, 151));  // 250 is the 152nd from 99
  EXPECT_FALSE(WindowCovers(span, 100, 1'000));
}

// The selection the cuda backend runs per column, one step at a time on the
// host, through the shared functions only.
struct WindowedColumn {
  std::vector<double> quantiles, var, es;
  int attempt = 0;  // the attempt that covered; kWindowAttempts: the whole column
};
WindowedColumn SelectByWindow(const StatisticsSelection& selection, const std::vector<float>& x,
                              double v0) {
  const int64_t rows = static_cast<int64_t>(x.size());
  const RankSpan span = NeededSpan(selection, rows);
  std::vector<float> sample(x.begin(), x.begin() + std::min<int64_t>(rows, kWindowSample));
  std::sort(sample.begin(), sample.end());
  std::vector<float> window;
  int64_t below = 0;
  double below_sum = 0;
  WindowedColumn out;
  const int attempts = WindowFromSample(span, rows) ? kWindowAttempts : 0;
  for (out.attempt = 0; out.attempt <= attempts; ++out.attempt) {
    float lo = -std::numeric_limits<float>::infinity(), hi = -lo;
    if (out.attempt < attempts) {
      const SampleRange range = SampleRangeOf(span, rows, out.attempt);
      if (range.bounded()) lo = sample[static_cast<size_t>(range.lo)];
      if (range.capped()) hi = sample[static_cast<size_t>(range.hi)];
    }
    window.clear();
    below = 0;
    below_sum = 0;
    for (float v : x) {
      if (v < lo) ++below, below_sum += v;
      if (v >= lo && v <= hi) window.push_back(v);
    }
    if (WindowCovers(span, below, static_cast<int64_t>(window.size()))) break;
  }
  if (out.attempt == attempts) out.attempt = kWindowAttempts;
  std::sort(window.begin(), window.end());
  auto quantile = [&](double level) {
    const QuantileRank r = QuantileRankOf(level, rows);
    return WindowQuantile(window.data(), below, r.low, r.fraction);
  };
  for (double q : selection.quantiles) out.quantiles.push_back(quantile(q));
  for (double a : selection.var) out.var.push_back(v0 - kDiscount * quantile(1 - a));
  for (double a : selection.es) {
    const double q = quantile(1 - a);
    double sum = below_sum, count = static_cast<double>(below);
    for (float v : window) {
      if (v > q) break;
      sum += v, ++count;
    }
    out.es.push_back(v0 - kDiscount * TailMean(sum, count, q, QuantileRankOf(1 - a, rows).low));
  }
  return out;
}

void ExpectSameAsReducerAndSort(const StatisticsSelection& selection, const std::vector<float>& x,
                                const WindowedColumn& w) {
  const int64_t rows = static_cast<int64_t>(x.size());
  const double v0 = 1'000;
  ColumnStatistics stats;
  stats.Resize(selection, 1);
  ColumnReducer(selection, rows, kDiscount).Reduce(x.data(), v0, 0, &stats);
  std::vector<float> sorted = x;
  std::sort(sorted.begin(), sorted.end());
  for (size_t l = 0; l < selection.quantiles.size(); ++l) {
    EXPECT_EQ(w.quantiles[l], stats.quantiles[l][0]);
    EXPECT_EQ(w.quantiles[l], ReferenceQuantile(sorted, selection.quantiles[l]));
  }
  for (size_t l = 0; l < selection.var.size(); ++l) EXPECT_EQ(w.var[l], stats.var[l][0]);
  for (size_t l = 0; l < selection.es.size(); ++l) {
    // Sums in another order: to their rounding.
    const double reference = v0 - kDiscount * ReferenceTailMean(sorted, 1 - selection.es[l]);
    EXPECT_NEAR(w.es[l], stats.es[l][0], 1e-12 * v0);
    EXPECT_NEAR(w.es[l], reference, 1e-12 * v0);
  }
}

TEST(WindowSelectionTest, MatchesTheReducerAtTheExamplesPathsAndOddOnes) {
  for (int64_t rows : {10'000, 9'999, 10'001, 4'097}) {
    int covered_first = 0;
    const int columns = 200;
    for (int c = 0; c < columns; ++c) {
      const std::vector<float> x = LognormalColumn(rows, 1'000 * rows + c);
      const WindowedColumn w = SelectByWindow(Tail(), x, 1'000);
      covered_first += w.attempt == 0;
      ExpectSameAsReducerAndSort(Tail(), x, w);
    }
    // About 1 column in 10,000 needs the retry at P = 10,000.
    EXPECT_GE(covered_first, columns - 2) << rows;
  }
}

TEST(WindowSelectionTest, ASampleThatMisjudgesFallsBackToTheRetryThenTheWholeColumn) {
  // 30 of the sample are the column's 30 smallest: attempt 0's upper bound
  // (the sample's 18th) is the column's 18th, short of rank 250; attempt 1's
  // (the sample's 44th, the 14th of 226 ordinary values) is past it.
  const std::vector<float> low = SmallestFirst(LognormalColumn(10'000, 8), 30);
  const WindowedColumn retried = SelectByWindow(Tail(), low, 1'000);
  EXPECT_EQ(retried.attempt, 1);
  ExpectSameAsReducerAndSort(Tail(), low, retried);
  // The whole sample from the column's 256 smallest: both attempts miss.
  const std::vector<float> lowest = SmallestFirst(LognormalColumn(10'000, 7), kWindowSample);
  const WindowedColumn whole = SelectByWindow(Tail(), lowest, 1'000);
  EXPECT_EQ(whole.attempt, kWindowAttempts);
  ExpectSameAsReducerAndSort(Tail(), lowest, whole);
}

}  // namespace
}  // namespace pricer
