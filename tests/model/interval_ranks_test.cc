// The arithmetic of the errors that the cuda kernels run on the device
// (server/model/interval_ranks.h), on the cpu: the count's deviation
// against a direct float64 sample variance, and the GPU's way to the
// interval bounds (units counted under the estimate, the ranks, the values
// at them read from a window that WindowSpan sized) against the cpu's
// ColumnErrors, at the example's P = 10,000 and odd P, with and without
// antithetic pairs.
#include "server/model/interval_ranks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "server/model/order_window.h"
#include "server/model/statistic_errors.h"
#include "server/model/statistics.h"
#include "tests/model/statistics_reference.h"

namespace pricer {
namespace {

constexpr double kDiscount = 0.97;

StatisticsSelection TailWithErrors() {
  StatisticsSelection s;
  s.quantiles = {0.01, 0.05};
  s.var = {0.99};
  s.es = {0.975};
  s.errors = true;
  return s;
}

// The units' shares of values <= q, as the kernels count them.
UnitCounts CountUnits(const std::vector<float>& values, double q, bool antithetic) {
  UnitCounts counts;
  const int64_t rows = static_cast<int64_t>(values.size());
  for (int64_t u = 0; u < UnitsOf(rows, antithetic); ++u) {
    int at_or_under = 0, in_unit = 0;
    for (int64_t p = antithetic ? 2 * u : u; p < rows && p <= (antithetic ? 2 * u + 1 : u); ++p) {
      at_or_under += values[p] <= q;
      ++in_unit;
    }
    if (at_or_under == in_unit) {
      ++counts.whole;
    } else if (at_or_under > 0) {
      ++counts.half;
    }
  }
  return counts;
}

// sd(N) directly, as statistic_errors.h defines it: the sample variance
// (float64, divisor units - 1) of the units' shares of values <= q (a
// pair's mean), times units, times the values per unit.
double DirectCountDeviation(const std::vector<float>& values, double q, bool antithetic) {
  const int64_t rows = static_cast<int64_t>(values.size());
  const int64_t units = UnitsOf(rows, antithetic);
  std::vector<double> shares;
  for (int64_t u = 0; u < units; ++u) {
    const int64_t p = antithetic ? 2 * u : u;
    const bool pair = antithetic && p + 1 < rows;
    shares.push_back(pair ? ((values[p] <= q) + (values[p + 1] <= q)) / 2.0 : values[p] <= q);
  }
  double mean = 0, squares = 0;
  for (double c : shares) mean += c;
  mean /= static_cast<double>(units);
  for (double c : shares) squares += (c - mean) * (c - mean);
  return (antithetic ? 2 : 1) *
         std::sqrt(squares / static_cast<double>(units - 1) * static_cast<double>(units));
}

TEST(IntervalRanksTest, TheCountsDeviationIsTheUnitsSampleDeviation) {
  for (bool antithetic : {false, true}) {
    for (int64_t rows : {10'000, 10'001}) {
      std::vector<float> values = LognormalColumn(rows, 11 + rows);
      // The last value under every level's estimate: an odd last path is
      // then a whole unit of its own.
      values.back() = *std::min_element(values.begin(), values.end());
      std::vector<float> sorted = values;
      std::sort(sorted.begin(), sorted.end());
      for (double level : {0.01, 0.25, 0.5}) {
        const double q = ReferenceQuantile(sorted, level);
        const double sd = CountDeviation(CountUnits(values, q, antithetic),
                                         UnitsOf(rows, antithetic), antithetic);
        EXPECT_NEAR(sd, DirectCountDeviation(values, q, antithetic), 1e-9 * sd)
            << rows << " rows, level " << level << ", antithetic " << antithetic;
        // Independent paths: close to the binomial sqrt(n p (1 - p)).
        if (!antithetic) {
          EXPECT_NEAR(sd, std::sqrt(rows * level * (1 - level)), 0.02 * sd);
        }
      }
    }
  }
}

// The kernels' way, run here: the interval's ranks from the units' counts,
// its bounds read from the sorted column; they are ColumnErrors' bounds, and
// without ties the ranks lie in the window WindowSpan sizes.
TEST(IntervalRanksTest, TheKernelsBoundsAreTheCpusAndLieInTheWindow) {
  const StatisticsSelection selection = TailWithErrors();
  const double z = ColumnErrors::NormalQuantile(selection.error_confidence);
  for (bool antithetic : {false, true}) {
    for (int64_t rows : {10'000, 9'999, 10'001}) {
      SCOPED_TRACE(testing::Message() << rows << " rows, antithetic " << antithetic);
      const RankSpan window = WindowSpan(selection, rows, antithetic);
      const RankSpan needed = NeededSpan(selection, rows);
      EXPECT_LE(window.first, needed.first);
      EXPECT_GE(window.last, needed.last);
      EXPECT_TRUE(WindowFromSample(window, rows));
      ColumnErrors errors(selection, rows, kDiscount, antithetic);
      for (int c = 0; c < 40; ++c) {
        const std::vector<float> values = LognormalColumn(rows, 1'000 * rows + c);
        std::vector<float> sorted = values;
        std::sort(sorted.begin(), sorted.end());
        ColumnStatistics cpu;
        cpu.Resize(selection, 1);
        cpu.v0[0] = 100;
        errors.Compute(values.data(), 0, &cpu);
        auto bounds = [&](double level) {
          const double q = ReferenceQuantile(sorted, level);
          const QuantileRank rank = QuantileRankOf(level, rows);
          const UnitCounts counts = CountUnits(values, q, antithetic);
          const RankSpan ranks =
              IntervalRanksOf(level, rows, rank.low, z,
                              CountDeviation(counts, UnitsOf(rows, antithetic), antithetic));
          EXPECT_GE(ranks.first, window.first) << level;
          EXPECT_LE(ranks.last, window.last) << level;
          const RankSpan expected = ExpectedIntervalRanks(level, rows, rank.low, z, antithetic);
          EXPECT_GE(ranks.first, expected.first) << level;
          EXPECT_LE(ranks.last, expected.last) << level;
          return std::pair<double, double>{std::min<double>(sorted[ranks.first], q),
                                           std::max<double>(sorted[ranks.last], q)};
        };
        for (size_t l = 0; l < selection.quantiles.size(); ++l) {
          const auto [lower, upper] = bounds(selection.quantiles[l]);
          EXPECT_EQ(cpu.quantiles_lo[l][0], lower) << "column " << c;
          EXPECT_EQ(cpu.quantiles_hi[l][0], upper) << "column " << c;
        }
        const auto [lower, upper] = bounds(1 - selection.var[0]);
        EXPECT_EQ(cpu.var_lo[0][0], 100 - kDiscount * upper) << "column " << c;
        EXPECT_EQ(cpu.var_hi[0][0], 100 - kDiscount * lower) << "column " << c;
      }
    }
  }
}

// Ties at the estimate raise the count under it past the ranks' own, and
// with it sd(N): the interval leaves the expected ranks, which is why the
// kernels select such a bound from the whole column.
TEST(IntervalRanksTest, TiesAtTheEstimateWidenTheIntervalPastTheExpectedRanks) {
  const int64_t rows = 10'000;
  std::vector<float> values = LognormalColumn(rows, 5);
  std::vector<float> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  // The values between ranks 80 and 1,500 all made the value of rank 100.
  const float tie = sorted[100], low = sorted[80], high = sorted[1'500];
  for (float& v : values) {
    if (v > low && v < high) v = tie;
  }
  sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const double level = 0.01, z = 1.959964;
  const double q = ReferenceQuantile(sorted, level);
  const RankSpan ranks = IntervalRanksOf(level, rows, QuantileRankOf(level, rows).low, z,
                                         CountDeviation(CountUnits(values, q, false), rows, false));
  const RankSpan expected =
      ExpectedIntervalRanks(level, rows, QuantileRankOf(level, rows).low, z, false);
  EXPECT_GT(ranks.last, expected.last);
}

TEST(IntervalRanksTest, WithoutErrorsTheWindowHoldsTheNeededRanksOnly) {
  StatisticsSelection selection = TailWithErrors();
  selection.errors = false;
  const RankSpan window = WindowSpan(selection, 10'000, false);
  const RankSpan needed = NeededSpan(selection, 10'000);
  EXPECT_EQ(window.first, needed.first);
  EXPECT_EQ(window.last, needed.last);
}

}  // namespace
}  // namespace pricer
