// The arithmetic of a column's Monte Carlo errors that both backends run
// (statistic_errors.h defines the errors): the standard error of the units'
// means of an influence function, and the ranks of the order statistics
// that bound a quantile's interval. The cpu's ColumnErrors calls these on
// the host, the cuda kernels on the device (server/backends/cuda/
// column_errors.cuh); the rank decisions are made from integer counts, so
// both sides take the same ranks. tests/model/interval_ranks_test.cc covers
// them on the cpu at P = 10,000 and odd P, against ColumnErrors.
#pragma once

#include <cmath>
#include <cstdint>

#include "server/model/host_device.h"
#include "server/model/order_window.h"
#include "server/model/statistics.h"

namespace pricer {

// The independent units of `rows` paths: the paths, or with antithetic
// variates the pairs 2k, 2k + 1 (an odd last path a unit of its own).
PRICER_HOST_DEVICE inline int64_t UnitsOf(int64_t rows, bool antithetic) {
  return antithetic ? (rows + 1) / 2 : rows;
}

// The sample standard deviation of `units` values over sqrt(units), from
// their sums `sum` and `squares` less a shift near their mean.
PRICER_HOST_DEVICE inline double UnitStandardError(double sum, double squares, int64_t units) {
  if (units < 2) return 0.0;
  const double n = static_cast<double>(units);
  const double spread = squares - sum * sum / n;
  return sqrt((spread > 0 ? spread : 0.0) / (n - 1) / n);
}

// The units by their share of values at or under an estimate: `whole`
// units all of whose values are (a path, both paths of a pair, an odd last
// path), `half` pairs one of whose paths is.
struct UnitCounts {
  int64_t whole = 0, half = 0;
};

// sd(N), N the count of values at or under the estimate: the units' shares
// (1, 1/2 or 0) have the sample variance v (divisor units - 1), so
// sd(N) = values per unit x sqrt(units v). Exact sums of the counts, so
// the host and the device round alike.
PRICER_HOST_DEVICE inline double CountDeviation(UnitCounts counts, int64_t units, bool antithetic) {
  if (units < 2) return 0.0;
  const double n = static_cast<double>(units);
  const double shares = static_cast<double>(counts.whole) + 0.5 * static_cast<double>(counts.half);
  const double squares =
      static_cast<double>(counts.whole) + 0.25 * static_cast<double>(counts.half);
  const double variance = (squares - shares * shares / n) / (n - 1);
  return (antithetic ? 2.0 : 1.0) * sqrt((variance > 0 ? variance : 0.0) * n);
}

// The ranks of the order statistics that bound the interval of the
// quantile of `level` of `rows` values, at rank `low` (QuantileRankOf):
// n level -+ z sd - 1/2 rounded outwards, no higher than `low` below and no
// lower than the next rank above.
PRICER_HOST_DEVICE inline RankSpan IntervalRanksOf(double level, int64_t rows, int64_t low,
                                                   double z, double sd) {
  const double expected = static_cast<double>(rows) * level;
  const int64_t next = low + 1 < rows ? low + 1 : rows - 1;
  int64_t lower = static_cast<int64_t>(floor(expected - z * sd - 0.5));
  int64_t upper = static_cast<int64_t>(ceil(expected + z * sd - 0.5));
  lower = lower < 0 ? 0 : lower > low ? low : lower;
  upper = upper < next ? next : upper > rows - 1 ? rows - 1 : upper;
  return {lower, upper};
}

// The interval's ranks when no value ties the estimate (low + 1 values at
// or under it) and the units' shares vary the most they can with that
// count (whole units and none, no halves), one rank wider each way: what a
// window holds so that the bounds are in it. A tie can widen the interval
// past it; the reduction then selects the bound from the whole column.
PRICER_HOST_DEVICE inline RankSpan ExpectedIntervalRanks(double level, int64_t rows, int64_t low,
                                                         double z, bool antithetic) {
  const int64_t values = low + 1 < rows ? low + 1 : rows;
  const UnitCounts most = antithetic ? UnitCounts{(values + 1) / 2, 0} : UnitCounts{values, 0};
  const RankSpan r = IntervalRanksOf(level, rows, low, z,
                                     CountDeviation(most, UnitsOf(rows, antithetic), antithetic));
  return {r.first > 0 ? r.first - 1 : 0, r.last + 1 < rows ? r.last + 1 : rows - 1};
}

// The ranks a window holds for `selection` over `rows` values: NeededSpan,
// and with errors every quantile's and VaR level's ExpectedIntervalRanks.
RankSpan WindowSpan(const StatisticsSelection& selection, int64_t rows, bool antithetic);

}  // namespace pricer
