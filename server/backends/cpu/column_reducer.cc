#include "server/backends/cpu/column_reducer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace pricer {
namespace {

// Values sampled per column to guess the lower tail's threshold.
constexpr int64_t kSample = 256;
// Independent accumulators of the moments pass.
constexpr int kLanes = 8;

struct Moments {
  double shift = 0;    // the first value
  double sum = 0;      // of (value - shift)
  double squares = 0;  // of (value - shift)^2
  float min = 0, max = 0;
};

// Eight floats and four doubles in explicit SIMD lanes (GCC vector
// extensions): AVX2 registers in the avx2 clone, SSE pairs otherwise.
typedef float Floats8 __attribute__((vector_size(32)));
typedef double Doubles4 __attribute__((vector_size(32)));

// One pass over a column in float64, with sums shifted by the first value so
// that the variance keeps its precision when the mean is large against the
// spread. kLanes independent accumulators, lane l taking the values at
// p = l (mod 8), in a fixed order: the bits are the same whichever clone runs
// (AVX2 where the processor has it, chosen at run time).
__attribute__((target_clones("avx2", "default"))) Moments ColumnMoments(const float* values,
                                                                        int64_t rows) {
  static_assert(kLanes == 8);
  const double shift = values[0];
  const Doubles4 shift4 = {shift, shift, shift, shift};
  Doubles4 s1_low = {}, s1_high = {}, s2_low = {}, s2_high = {};
  Floats8 lo, hi;
  for (int l = 0; l < 8; ++l) lo[l] = hi[l] = values[0];
  int64_t p = 0;
  for (; p + 8 <= rows; p += 8) {
    Floats8 x;
    std::memcpy(&x, values + p, sizeof(x));
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
    const Doubles4 low =
        __builtin_convertvector(__builtin_shufflevector(x, x, 0, 1, 2, 3), Doubles4) - shift4;
    const Doubles4 high =
        __builtin_convertvector(__builtin_shufflevector(x, x, 4, 5, 6, 7), Doubles4) - shift4;
    s1_low += low;
    s1_high += high;
    s2_low += low * low;
    s2_high += high * high;
  }
  Moments m;
  m.shift = shift;
  m.min = lo[0];
  m.max = hi[0];
  for (int l = 0; l < 4; ++l) {
    m.sum += s1_low[l] + s1_high[l];
    m.squares += s2_low[l] + s2_high[l];
  }
  for (int l = 1; l < 8; ++l) {
    m.min = std::min(m.min, lo[l]);
    m.max = std::max(m.max, hi[l]);
  }
  for (; p < rows; ++p) {
    const double d = static_cast<double>(values[p]) - shift;
    m.sum += d;
    m.squares += d * d;
    m.min = std::min(m.min, values[p]);
    m.max = std::max(m.max, values[p]);
  }
  return m;
}

// Copies the values <= threshold to `out` (without branches) and returns how
// many there are.
int64_t BelowThreshold(const float* values, int64_t rows, float threshold, float* out) {
  int64_t n = 0;
  for (int64_t p = 0; p < rows; ++p) {
    out[n] = values[p];
    n += values[p] <= threshold ? 1 : 0;
  }
  return n;
}

}  // namespace

ColumnReducer::ColumnReducer(const StatisticsSelection& selection, int64_t rows, double discount)
    : selection_(selection), rows_(rows), discount_(discount) {
  for (double q : selection_.quantiles) quantile_ranks_.push_back(QuantileRankOf(q, rows_));
  for (double a : selection_.var) var_ranks_.push_back(QuantileRankOf(1.0 - a, rows_));
  for (double a : selection_.es) es_ranks_.push_back(QuantileRankOf(1.0 - a, rows_));
  for (const auto* ranks : {&quantile_ranks_, &var_ranks_, &es_ranks_}) {
    for (const QuantileRank& r : *ranks) {
      needed_.push_back(r.low);
      if (r.fraction > 0) needed_.push_back(r.low + 1);
    }
  }
  std::sort(needed_.begin(), needed_.end());
  needed_.erase(std::unique(needed_.begin(), needed_.end()), needed_.end());
  order_ = !needed_.empty();
  // VaR and ES look at the lower tail only: there a threshold from a small
  // sample keeps the selection to a few percent of the column.
  tail_only_ = order_ && rows_ >= 8 * kSample && (needed_.back() + 1) * 8 <= rows_;
  sorted_.reserve(static_cast<size_t>(rows_));
  if (tail_only_) below_.resize(static_cast<size_t>(rows_));
}

float ColumnReducer::TailThreshold(const float* values) {
  // A threshold above the needed ranks with a margin, from a deterministic
  // sample of the column.
  const int64_t need = needed_.back() + 1;
  const int64_t stride = rows_ / kSample;
  sample_.resize(kSample);
  for (int64_t s = 0; s < kSample; ++s) sample_[s] = values[s * stride];
  // 1.5 times the expected sample rank of the deepest needed value, plus 6:
  // the tail copy misses a needed rank (and the reducer falls back to the
  // whole column) in about 1% of columns at the 0.975 level, P = 10,000.
  const int64_t at = std::min(kSample - 1, 3 * need * kSample / (2 * rows_) + 6);
  std::nth_element(sample_.begin(), sample_.begin() + at, sample_.end());
  return sample_[at];
}

void ColumnReducer::PlaceOrderStatistics(const float* values) {
  // The tail copy may miss needed ranks when the sample misjudged the tail;
  // then take all values.
  if (static_cast<int64_t>(sorted_.size()) < needed_.back() + 1) {
    sorted_.assign(values, values + rows_);
  }
  // Successive selections from the highest rank down: after placing rank r,
  // the lower ranks lie in the shrinking prefix [0, r).
  // The rank just below a placed one (the pairs k, k + 1 of interpolation)
  // is the largest of the prefix: a linear scan instead of a selection.
  auto end = sorted_.end();
  for (auto r = needed_.rbegin(); r != needed_.rend(); ++r) {
    const auto at = sorted_.begin() + *r;
    if (at + 1 == end && r != needed_.rbegin()) {
      std::iter_swap(std::max_element(sorted_.begin(), end), at);
    } else {
      std::nth_element(sorted_.begin(), at, end);
    }
    end = at;
  }
}

double ColumnReducer::Quantile(const QuantileRank& rank) const {
  const double low = sorted_[static_cast<size_t>(rank.low)];
  if (rank.fraction == 0) return low;
  return InterpolateQuantile(low, sorted_[static_cast<size_t>(rank.low + 1)], rank.fraction);
}

double ColumnReducer::TailMean(double q) const {
  // The selected copy holds every value <= q: q lies below the largest
  // needed order statistic, and the tail copy holds all values up to a
  // threshold above it.
  double sum = 0;
  int64_t count = 0;
  for (float v : sorted_) {
    if (v <= q) {
      sum += v;
      ++count;
    }
  }
  return sum / static_cast<double>(count);
}

void ColumnReducer::Reduce(const float* values, double v0, int64_t k, ColumnStatistics* out) {
  out->v0[k] = v0;
  if (selection_.moments()) {
    const Moments m = ColumnMoments(values, rows_);
    const double n = static_cast<double>(rows_);
    if (selection_.mean) out->mean[k] = ShiftedMean(m.shift, m.sum, n);
    if (selection_.stddev) out->stddev[k] = ShiftedStddev(m.sum, m.squares, n);
    if (selection_.min) out->min[k] = m.min;
    if (selection_.max) out->max[k] = m.max;
  }
  if (!order_) return;
  sorted_.clear();
  if (tail_only_) {
    const int64_t n = BelowThreshold(values, rows_, TailThreshold(values), below_.data());
    sorted_.assign(below_.begin(), below_.begin() + n);
  }
  PlaceOrderStatistics(values);
  for (size_t l = 0; l < quantile_ranks_.size(); ++l) {
    out->quantiles[l][k] = Quantile(quantile_ranks_[l]);
  }
  for (size_t l = 0; l < var_ranks_.size(); ++l) {
    out->var[l][k] = v0 - discount_ * Quantile(var_ranks_[l]);
  }
  for (size_t l = 0; l < es_ranks_.size(); ++l) {
    out->es[l][k] = v0 - discount_ * TailMean(Quantile(es_ranks_[l]));
  }
}

}  // namespace pricer
