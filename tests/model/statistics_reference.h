// Reference statistics of a column, recomputed the slow and obvious way (a
// full sort, long double sums) for the tests of ColumnReducer and of the
// backends that call it.
#pragma once

#include <cstdint>
#include <vector>

#include "server/model/statistics.h"

namespace pricer {

// The documented quantile of level q of the sorted values x_(0..n-1):
// x_(k) + (h - k) (x_(k+1) - x_(k)), h = (n - 1) q, k = floor(h).
double ReferenceQuantile(const std::vector<float>& sorted, double q);

// ES's tail mean at level `level` (1 - a) of the sorted values: the mean of
// the k = floor((n - 1) level) + 1 smallest, in float64 (docs/risk.md).
double ReferenceTailMean(const std::vector<float>& sorted, double level);

// Mean and sample stddev (divisor n - 1; 0 for n = 1) by two passes of long
// double sums.
struct ReferenceMoments {
  double mean = 0;
  double stddev = 0;
};
ReferenceMoments ReferenceMomentsOf(const std::vector<float>& values);

// Expects column `column` of `stats` to hold the mean and stddev of `values`
// to `relative` and their exact min and max.
void ExpectMomentsMatch(const ColumnStatistics& stats, int64_t column,
                        const std::vector<float>& values, double relative);

// Expects column `column` of `stats` to hold V0 = `v0` and, for every level
// of `selection`, the quantile exactly as documented (from a full sort), VaR
// exactly v0 - discount * quantile, and ES to the rounding of a float64 sum
// in another order (1e-12 of |v0| + discount |tail mean|).
void ExpectRiskMatches(const ColumnStatistics& stats, int64_t column,
                       const StatisticsSelection& selection, std::vector<float> values, double v0,
                       double discount);

// Columns for the order-statistics window (server/model/order_window.h):
// `rows` terminal values of a lognormal book (1,000 exp(-0.02 + 0.2 z)),
// drawn from `seed`.
std::vector<float> LognormalColumn(int64_t rows, uint64_t seed);
// `values` with its `count` smallest moved to the front, the rest in their
// order: a column whose first values, the window's sample, misjudge it.
std::vector<float> SmallestFirst(std::vector<float> values, size_t count);

// `values` with the two values ranked just above the quantile at `level`
// (1 - a) set to the one of its lower rank: three values tie at the quantile,
// two of them past ES's tail.
std::vector<float> TiedAtTheQuantile(std::vector<float> values, double level);
// `values` with each repeat of a value moved one float up (ties apart).
std::vector<float> TiesApart(std::vector<float> values);

}  // namespace pricer
