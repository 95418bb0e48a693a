// The cpu backend's per-column reduction: the statistics of one column of SC
// in one pass over its values, which computes the moments and, at the same
// time, copies out the few values that can hold the order statistics asked
// for (a window from a sample of the column, server/model/order_window.h).
// An exact selection over that copy gives the quantiles, VaR and ES; when
// the sample misjudged the window, a wider one and at last the whole column.
// The definitions it computes are in server/model/statistics.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "server/backends/cpu/column_pass.h"
#include "server/model/order_window.h"
#include "server/model/statistics.h"

namespace pricer {

// The window of the sample's order statistics `range` (SampleRangeOf): the
// bounds sample[lo] and sample[hi] of a column's first kWindowSample values
// sorted; `sample` and `scratch` are its scratch.
ColumnWindow SampleWindow(const float* values, SampleRange range, std::vector<float>& sample,
                          std::vector<float>& scratch);

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
  // Buckets of the window's values by value; counts_ holds their sizes and
  // bucket_ each value's bucket.
  struct Buckets {
    float least = 0;
    float scale = 0;
    int64_t count = 0;  // at most 2^16
    // Rounding is monotone: v <= w gives Of(v) <= Of(w). Clamped before the
    // conversion, which is undefined for NaN and out-of-range values (NaN
    // goes to bucket 0; validation keeps it out of SC). Branch-free, so the
    // compiler computes a window's buckets 4 at a time (SSE).
    int32_t Of(float v) const {
      const float place = (v - least) * scale;
      const auto last = static_cast<float>(count - 1);
      return static_cast<int32_t>(place >= 0 ? std::min(place, last) : 0.0f);
    }
  };
  Buckets CountBuckets();
  // Sets placed_ to the needed order statistics of the column (ranks shifted
  // by below_ in the window): the buckets that hold them are sorted, not the
  // window.
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
  std::vector<float> sample_, scratch_;
  // The selection's scratch: bucket sizes, the slot of each bucket that holds
  // a needed rank (or -1), those buckets' values, and the placed statistics.
  struct Slot {
    int64_t bucket, begin, end;  // its values: gathered_[begin, end)
  };
  std::vector<int64_t> counts_;
  std::vector<int32_t> bucket_;  // of each of window_'s kept_ values
  std::vector<int32_t> slot_of_;
  std::vector<Slot> slots_;
  std::vector<std::pair<int32_t, int64_t>> placements_;  // per needed rank: slot, place
  std::vector<float> gathered_;
  std::vector<float> placed_;  // per needed rank
};

}  // namespace pricer
