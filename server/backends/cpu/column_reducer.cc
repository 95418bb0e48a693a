#include "server/backends/cpu/column_reducer.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace pricer {
namespace {

using Pass = ColumnPass;
using Window = ColumnWindow;

constexpr float kInfinity = std::numeric_limits<float>::infinity();

}  // namespace

ColumnReducer::ColumnReducer(const StatisticsSelection& selection, int64_t rows, double discount,
                             ReducerKernel kernel)
    : selection_(selection),
      rows_(rows),
      discount_(discount),
      select_(kernel),
      tail_sum_(ChooseTailSum(kernel)) {
  for (double q : selection_.quantiles) quantile_ranks_.push_back(QuantileRankOf(q, rows_));
  for (double a : selection_.var) var_ranks_.push_back(QuantileRankOf(1.0 - a, rows_));
  for (double a : selection_.es) es_ranks_.push_back(QuantileRankOf(1.0 - a, rows_));
  needed_ = NeededRanks(selection_, rows_);
  order_ = !needed_.empty();
  if (order_) {
    span_ = {needed_.front(), needed_.back()};
    sampled_ = WindowFromSample(span_, rows_);
    bounded_ = sampled_ && SampleRangeOf(span_, rows_, 0).bounded();
  }
  first_ = ChooseColumnPass(kernel, selection_.mean || selection_.stddev,
                            selection_.min || selection_.max, sampled_, bounded_);
  retry_ = ChooseColumnPass(kernel, false, false, true, bounded_);
  if (order_) window_.resize(static_cast<size_t>(rows_ + kColumnPassSlack));
}

Window SampleWindow(const float* values, SampleRange range, OrderSelect& select) {
  Window window;
  window.lo = -kInfinity;
  window.hi = kInfinity;
  window.bounded = range.bounded();
  int64_t ranks[2];
  float at[2];
  size_t count = 0;
  if (range.bounded()) ranks[count++] = range.lo;
  if (range.capped()) ranks[count++] = range.hi;
  select.Select(values, kWindowSample, {ranks, count}, at);
  if (range.bounded()) window.lo = at[0];
  if (range.capped()) window.hi = at[count - 1];
  return window;
}

Window ColumnReducer::WindowOf(const float* values, int attempt) {
  return SampleWindow(values, SampleRangeOf(span_, rows_, attempt), select_);
}

Pass ColumnReducer::Run(const float* values) {
  auto whole_column = [&] {
    std::memcpy(window_.data(), values, static_cast<size_t>(rows_) * sizeof(float));
    Pass whole;
    whole.kept = rows_;
    return whole;
  };
  const Pass pass =
      first_(values, rows_, sampled_ ? WindowOf(values, 0) : Window{}, window_.data());
  if (!order_) return pass;
  Pass window = sampled_ ? pass : whole_column();
  auto covers = [&](const Pass& w) { return WindowCovers(span_, w.below, w.kept); };
  if (!covers(window)) window = retry_(values, rows_, WindowOf(values, 1), window_.data());
  if (!covers(window)) window = whole_column();
  kept_ = window.kept;
  below_ = window.below;
  below_sum_ = window.below_sum;
  return pass;
}

void ColumnReducer::PlaceOrderStatistics() {
  placed_.resize(needed_.size());
  select_.Select(window_.data(), kept_, needed_, placed_.data(), below_);
}

float ColumnReducer::OrderStatistic(int64_t rank) const {
  const auto at = std::lower_bound(needed_.begin(), needed_.end(), rank);
  return placed_[static_cast<size_t>(at - needed_.begin())];
}

double ColumnReducer::Quantile(const QuantileRank& rank) const {
  const double low = OrderStatistic(rank.low);
  if (rank.fraction == 0) return low;
  return InterpolateQuantile(low, OrderStatistic(rank.low + 1), rank.fraction);
}

double ColumnReducer::EsTailMean(double q, int64_t low) const {
  // q is the window's: every value <= q is under the window or in it.
  const TailSum tail = tail_sum_(window_.data(), kept_, q);
  return pricer::TailMean(below_sum_ + tail.sum, static_cast<double>(below_ + tail.count), q, low);
}

void ColumnReducer::Reduce(const float* values, double v0, int64_t k, ColumnStatistics* out) {
  out->v0[k] = v0;
  const Pass pass = Run(values);
  if (selection_.moments()) {
    const double n = static_cast<double>(rows_);
    if (selection_.mean) out->mean[k] = ShiftedMean(pass.shift, pass.sum, n);
    if (selection_.stddev) out->stddev[k] = ShiftedStddev(pass.sum, pass.squares, n);
    if (selection_.min) out->min[k] = pass.min;
    if (selection_.max) out->max[k] = pass.max;
  }
  if (!order_) return;
  PlaceOrderStatistics();
  for (size_t l = 0; l < quantile_ranks_.size(); ++l) {
    out->quantiles[l][k] = Quantile(quantile_ranks_[l]);
  }
  for (size_t l = 0; l < var_ranks_.size(); ++l) {
    out->var[l][k] = v0 - discount_ * Quantile(var_ranks_[l]);
  }
  for (size_t l = 0; l < es_ranks_.size(); ++l) {
    out->es[l][k] = v0 - discount_ * EsTailMean(Quantile(es_ranks_[l]), es_ranks_[l].low);
  }
}

}  // namespace pricer
