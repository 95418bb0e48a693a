// The cpu backend's per-column reduction: the statistics of one column of SC
// in one pass over its values, which computes the moments and, at the same
// time, copies out the few values that can hold the order statistics asked
// for (a window from a sample of the column, server/model/order_window.h).
// An exact selection over that copy gives the quantiles, VaR and ES; when
// the sample misjudged the window, a wider one and at last the whole column.
// The definitions it computes are in server/model/statistics.h.
#pragma once

#include <cstdint>
#include <vector>

#include "server/backends/cpu/column_pass.h"
#include "server/backends/cpu/order_select.h"
#include "server/backends/cpu/tail_sum.h"
#include "server/model/order_window.h"
#include "server/model/statistics.h"

namespace pricer {

// The window of the sample's order statistics `range` (SampleRangeOf): the
// bounds sample[lo] and sample[hi] of a column's first kWindowSample values
// sorted, selected by `select`.
ColumnWindow SampleWindow(const float* values, SampleRange range, OrderSelect& select);

// Reduces columns of `rows` values one at a time. Holds the scratch of the
// selection; use one per thread.
class ColumnReducer {
 public:
  // `discount` = exp(-r T).
  ColumnReducer(const StatisticsSelection& selection, int64_t rows, double discount,
                ReducerKernel kernel = ReducerKernel::kBest);

  // Sets column k of `out` to the statistics of `values` (rows entries),
  // whose value today is `v0`.
  void Reduce(const float* values, double v0, int64_t k, ColumnStatistics* out);
  // The order statistic of `rank` of the column Reduce last took, one of
  // NeededRanks (the contributions' band ends among them).
  float OrderStatistic(int64_t rank) const;

 private:
  // The window of the order statistics from the column's sample
  // (SampleWindow), with a margin that grows with `attempt` (0, 1).
  ColumnWindow WindowOf(const float* values, int attempt);
  // Runs the pass over `values` and, when order statistics are asked for,
  // leaves in `window_` values that hold every needed rank.
  ColumnPass Run(const float* values);
  // Sets placed_ to the needed order statistics of the column (ranks shifted
  // by below_ in the window).
  void PlaceOrderStatistics();
  // The value quantile at `rank` in the placed order statistics.
  double Quantile(const QuantileRank& rank) const;
  // ES's tail mean (TailMean, statistics.h) at quantile q of rank `low`,
  // from the values <= q: those under the window and those in it.
  double EsTailMean(double q, int64_t low) const;

  const StatisticsSelection selection_;
  const int64_t rows_;
  const double discount_;
  std::vector<QuantileRank> quantile_ranks_, var_ranks_, es_ranks_;
  std::vector<int64_t> needed_;         // order statistics to place, ascending
  RankSpan span_;                       // their first and last
  bool order_ = false;                  // any order statistic needed at all
  bool sampled_ = false;                // a window from the sample (else the whole column)
  bool bounded_ = false;                // the window may start above the lowest value
  ColumnPassFunction first_ = nullptr;  // the moments asked for, and the window when sampled
  ColumnPassFunction retry_ = nullptr;  // the window alone
  std::vector<float> window_;           // the window's values
  int64_t kept_ = 0;                    // values in window_
  int64_t below_ = 0;                   // values under the window
  double below_sum_ = 0;
  OrderSelect select_;
  TailSumFunction tail_sum_;
  std::vector<float> placed_;  // per needed rank
};

}  // namespace pricer
