#include "server/model/statistic_errors.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "server/model/interval_ranks.h"

namespace pricer {
namespace {

// Sums of a unit's value less a shift near their mean (so that the
// variance keeps its precision).
struct UnitSums {
  double sum = 0, squares = 0;
  void Add(double deviation) {
    sum += deviation;
    squares += deviation * deviation;
  }
  double StandardError(int64_t units) const { return UnitStandardError(sum, squares, units); }
};

}  // namespace

double ColumnErrors::NormalQuantile(double confidence) {
  // Phi(z) = (1 + confidence) / 2 by bisection on Phi(z) = erfc(-z / sqrt 2) / 2:
  // once per job, to the last bit.
  const double target = (1 + confidence) / 2;
  double low = 0, high = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (low + high) / 2;
    if (mid == low || mid == high) break;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < target ? low : high) = mid;
  }
  return (low + high) / 2;
}

ColumnErrors::ColumnErrors(const StatisticsSelection& selection, int64_t rows, double discount,
                           bool antithetic)
    : selection_(selection),
      rows_(rows),
      discount_(discount),
      antithetic_(antithetic),
      z_(NormalQuantile(selection.error_confidence)),
      units_(antithetic ? (rows + 1) / 2 : rows),
      sorted_(static_cast<size_t>(rows)) {}

template <typename F>
double ColumnErrors::UnitMean(const float* values, int64_t u, F f) const {
  if (!antithetic_) return f(values[u]);
  const int64_t p = 2 * u;
  return p + 1 < rows_ ? 0.5 * (f(values[p]) + f(values[p + 1])) : f(values[p]);
}

double ColumnErrors::PlaceQuantile(const float* values, double level, int64_t window) {
  const QuantileRank rank = QuantileRankOf(level, rows_);
  const int64_t k = rank.low, next = std::min(k + 1, rows_ - 1);
  std::memcpy(sorted_.data(), values, static_cast<size_t>(rows_) * sizeof(float));
  const auto begin = sorted_.begin();
  if (window < rows_) std::nth_element(begin, begin + window - 1, sorted_.end());
  std::nth_element(begin, begin + next, begin + window);
  std::nth_element(begin, begin + k, begin + next + 1);
  return InterpolateQuantile(sorted_[k], sorted_[next], rank.fraction);
}

ColumnErrors::Interval ColumnErrors::QuantileInterval(const float* values, double level) {
  // N, the count of values under the quantile, has a variance of at most
  // units / 4 (a path's count is 0 or 1) or units (a pair's is 0, 1 or 2),
  // estimated with the divisor units - 1: no bound lies above rank
  // `window` - 1, so one selection over the whole column puts the `window`
  // smallest values first and the rest works among them.
  const double expected = static_cast<double>(rows_) * level;
  const double units = static_cast<double>(units_);
  const double widest =
      z_ * std::sqrt((antithetic_ ? 1.0 : 0.25) * units * units / std::max(1.0, units - 1));
  const QuantileRank rank = QuantileRankOf(level, rows_);
  const int64_t k = rank.low, next = std::min(k + 1, rows_ - 1);
  const int64_t window = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(expected + widest - 0.5)) + 2, next + 1, rows_);
  Interval interval;
  interval.estimate = PlaceQuantile(values, level, window);
  const auto begin = sorted_.begin();
  // sd(N) from the units' counts of values <= the estimate.
  UnitCounts counts;
  for (int64_t u = 0; u < units_; ++u) {
    const double share =
        UnitMean(values, u, [&](double v) { return v <= interval.estimate ? 1.0 : 0.0; });
    counts.whole += share == 1.0;
    counts.half += share == 0.5;
  }
  const RankSpan bounds =
      IntervalRanksOf(level, rows_, k, z_, CountDeviation(counts, units_, antithetic_));
  // The bounds' ranks are within the window (sd(N) <= `widest` / z).
  const int64_t lower = bounds.first, upper = std::min(bounds.last, window - 1);
  // Each bound lies on its side of k and k + 1, already partitioned.
  std::nth_element(begin, begin + lower, begin + k + 1);
  std::nth_element(begin + next, begin + upper, begin + window);
  interval.lower = std::min<double>(sorted_[lower], interval.estimate);
  interval.upper = std::max<double>(sorted_[upper], interval.estimate);
  return interval;
}

void ColumnErrors::Compute(const float* values, int64_t k, ColumnStatistics* out) {
  const size_t j = static_cast<size_t>(k);
  const StatisticsSelection& s = selection_;
  if (s.mean || s.stddev) {
    // The reducer's statistics of the column, not computed again: the mean
    // (a pass of its own only when stddev alone was asked for) and stddev,
    // whose square shifts the sums of (x - mean)^2.
    double mean = 0;
    if (s.mean) {
      mean = out->mean[j];
    } else {
      for (int64_t p = 0; p < rows_; ++p) mean += values[p];
      mean /= static_cast<double>(rows_);
    }
    const double stddev = s.stddev ? out->stddev[j] : 0.0;
    // One pass for both: the units' means of x and of (x - mean)^2.
    UnitSums first, second;
    for (int64_t u = 0; u < units_; ++u) {
      if (s.mean) first.Add(UnitMean(values, u, [](double x) { return x; }) - mean);
      if (s.stddev) {
        second.Add(UnitMean(values, u, [mean](double x) { return (x - mean) * (x - mean); }) -
                   stddev * stddev);
      }
    }
    if (s.mean) out->mean_se[j] = first.StandardError(units_);
    // se(stddev) = se(variance) / (2 stddev): the delta method.
    if (s.stddev) out->stddev_se[j] = stddev > 0 ? second.StandardError(units_) / (2 * stddev) : 0;
  }
  for (size_t l = 0; l < s.quantiles.size(); ++l) {
    const Interval q = QuantileInterval(values, s.quantiles[l]);
    out->quantiles_lo[l][j] = q.lower;
    out->quantiles_hi[l][j] = q.upper;
  }
  // VaR_a = V0 - exp(-r T) quantile_{1-a}(SC): the upper bound from the lower.
  const double v0 = out->v0[j];
  for (size_t l = 0; l < s.var.size(); ++l) {
    const Interval q = QuantileInterval(values, 1.0 - s.var[l]);
    out->var_lo[l][j] = v0 - discount_ * q.upper;
    out->var_hi[l][j] = v0 - discount_ * q.lower;
  }
  // ES_a's influence: exp(-r T) min(x - q, 0) / (1 - a), q = quantile_{1-a}(SC).
  for (size_t l = 0; l < s.es.size(); ++l) {
    const double tail = 1.0 - s.es[l];
    const double q = PlaceQuantile(values, tail, rows_);
    const double scale = discount_ / tail;
    UnitSums influence;
    for (int64_t u = 0; u < units_; ++u) {
      influence.Add(
          UnitMean(values, u, [q, scale](double x) { return scale * std::min(x - q, 0.0); }));
    }
    out->es_se[l][j] = influence.StandardError(units_);
  }
}

RankSpan WindowSpan(const StatisticsSelection& selection, int64_t rows, bool antithetic) {
  RankSpan span = NeededSpan(selection, rows);
  if (!selection.errors) return span;
  const double z = ColumnErrors::NormalQuantile(selection.error_confidence);
  auto widen = [&](double level) {
    const RankSpan r =
        ExpectedIntervalRanks(level, rows, QuantileRankOf(level, rows).low, z, antithetic);
    span.first = std::min(span.first, r.first);
    span.last = std::max(span.last, r.last);
  };
  for (double q : selection.quantiles) widen(q);
  for (double a : selection.var) widen(1.0 - a);
  return span;
}

}  // namespace pricer
