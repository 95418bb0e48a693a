// The Monte Carlo error of a column's statistics (docs/risk.md, "Errors"),
// from the column's values and the statistics already computed of it. The
// paths, or with antithetic variates the pairs of paths 2k and 2k + 1, are
// the independent units the errors count:
//   mean, stddev, ES: the standard error of an estimator that is a mean over
//     the units of its influence function (x; (x - mean)^2, then by the delta
//     method / (2 stddev); min(PnL - q, 0) / (1 - a)), i.e. the sample
//     standard deviation of the units' means of it over sqrt(units);
//   quantiles and VaR: the order statistics x_(l) and x_(u) around the
//     estimate, whose ranks are n q -+ z sd(N) - 1/2, rounded outwards, with
//     N the count of values under the quantile (binomial for independent
//     paths; its variance from the units' counts, so antithetic pairs are
//     counted as what they are) and z the normal quantile of the confidence.
// The cpu backend calls it on the host: a few passes over the column. The
// cuda backend's kernels compute the same errors on the GPU through the
// arithmetic in interval_ranks.h, which this calls too.
#pragma once

#include <cstdint>
#include <vector>

#include "server/model/statistics.h"

namespace pricer {

class ColumnErrors {
 public:
  // `discount` = exp(-r T). `antithetic`: paths 2k and 2k + 1 are one unit
  // (an odd last path is a unit of its own).
  ColumnErrors(const StatisticsSelection& selection, int64_t rows, double discount,
               bool antithetic);

  // Sets the errors of column k of `out`, whose statistics (v0 included) are
  // set, from the column's `rows` values.
  void Compute(const float* values, int64_t k, ColumnStatistics* out);

  // The two-sided normal quantile z of `confidence` (0.95: 1.959964).
  static double NormalQuantile(double confidence);

 private:
  struct Interval {
    double estimate, lower, upper;
  };
  // The quantile of `level` of the column, by the rule of statistics.h:
  // sorted_ then holds the column's values with the `window` smallest first
  // (all of them when `window` is rows), x_(k) and x_(k + 1) in place, those
  // under them before and those over after.
  double PlaceQuantile(const float* values, double level, int64_t window);
  // That quantile and the bounds of its interval.
  Interval QuantileInterval(const float* values, double level);
  // The mean of f over unit u: f(x) of a path, or the mean over a pair.
  template <typename F>
  double UnitMean(const float* values, int64_t u, F f) const;

  const StatisticsSelection selection_;
  const int64_t rows_;
  const double discount_;
  const bool antithetic_;
  const double z_;
  const int64_t units_;        // paths, or pairs of paths
  std::vector<float> sorted_;  // scratch: the column's values, partly ordered
};

}  // namespace pricer
