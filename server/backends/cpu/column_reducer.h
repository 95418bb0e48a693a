// The cpu backend's per-column reduction: the statistics of one column of SC
// while it is still in cache, in one pass for the moments and an exact
// selection (not a full sort) for the order statistics. The definitions it
// computes are in server/model/statistics.h.
#pragma once

#include <cstdint>
#include <vector>

#include "server/model/statistics.h"

namespace pricer {

// Reduces columns of `rows` values one at a time. Holds the scratch of the
// selection; use one per thread.
class ColumnReducer {
 public:
  // `discount` = exp(-r T).
  ColumnReducer(const StatisticsSelection& selection, int64_t rows, double discount);

  // Sets column k of `out` to the statistics of `values` (rows entries),
  // whose value today is `v0`.
  void Reduce(const float* values, double v0, int64_t k, ColumnStatistics* out);

 private:
  // A value above every needed order statistic (with high probability),
  // from a sample of the column.
  float TailThreshold(const float* values);
  // Places the order statistics that the ranks need into `sorted_`, a
  // partially ordered copy of the lower tail (values <= the threshold) or,
  // when that misses a rank or no tail is asked for, of all values.
  void PlaceOrderStatistics(const float* values);
  // The value quantile at `rank` in the placed order statistics.
  double Quantile(const QuantileRank& rank) const;
  // Mean of the values <= q, over the selected copy.
  double TailMean(double q) const;

  const StatisticsSelection selection_;
  const int64_t rows_;
  const double discount_;
  std::vector<QuantileRank> quantile_ranks_, var_ranks_, es_ranks_;
  std::vector<int64_t> needed_;  // order statistics to place, ascending
  bool tail_only_ = false;       // every needed rank is in the lower tail
  bool order_ = false;           // any order statistic needed at all
  std::vector<float> sorted_;    // partially ordered values
  std::vector<float> below_;     // the tail copy's buffer (rows entries)
  std::vector<float> sample_;
};

}  // namespace pricer
