#include "server/backends/cpu/column_reducer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace pricer {
namespace {

using Pass = ColumnPass;
using Window = ColumnWindow;

constexpr float kInfinity = std::numeric_limits<float>::infinity();

// Moves the `top` smallest of `sample` (top <= kWindowSample / 4) to its first
// `top` places, the largest of them last (the others are lost); `scratch` has room for
// the sample. A pivot from a sorted sub-sample of 16 (every 16th value)
// expected to have about twice `top` under it, the values at or under it
// packed to the front without branches, and a selection among those few:
// about a quarter of sorting the smallest (measured in
// bench/column_reducer_bench). A pivot with fewer than `top` under it tries
// a higher one; past the sub-sample's largest, every value takes part.
void SmallestFirst(std::vector<float>& sample, int64_t top, std::vector<float>& scratch) {
  constexpr int64_t kSub = 16, kStride = kWindowSample / kSub;
  std::array<float, kSub> sub;
  for (int64_t i = 0; i < kSub; ++i)
    sub[static_cast<size_t>(i)] = sample[static_cast<size_t>(i * kStride)];
  std::sort(sub.begin(), sub.end());
  // The j-th of the sub-sample has about (j + 1) / 17 of the sample under it.
  int64_t j = (2 * top + 16) * (kSub + 1) / kWindowSample;
  for (; j < kSub; j += 2) {
    const float pivot = sub[static_cast<size_t>(j)];
    int64_t under = 0;
    for (const float v : sample) {
      scratch[static_cast<size_t>(under)] = v;
      under += v <= pivot ? 1 : 0;
    }
    if (under < top) continue;
    std::nth_element(scratch.begin(), scratch.begin() + top - 1, scratch.begin() + under);
    std::copy(scratch.begin(), scratch.begin() + top, sample.begin());
    return;
  }
  std::nth_element(sample.begin(), sample.begin() + top - 1, sample.end());
}

// The least and largest of `values`, in four SSE lanes.
std::pair<float, float> LeastAndLargest(const float* values, int64_t count) {
  typedef float Floats4 __attribute__((vector_size(16)));
  Floats4 lo = values[0] - Floats4{}, hi = lo;
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    Floats4 x;
    std::memcpy(&x, values + i, sizeof(x));
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  float least = lo[0], largest = hi[0];
  for (int l = 1; l < 4; ++l) least = std::min(least, lo[l]), largest = std::max(largest, hi[l]);
  for (; i < count; ++i) least = std::min(least, values[i]), largest = std::max(largest, values[i]);
  return {least, largest};
}

}  // namespace

ColumnReducer::ColumnReducer(const StatisticsSelection& selection, int64_t rows, double discount,
                             ReducerKernel kernel)
    : selection_(selection), rows_(rows), discount_(discount) {
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

Window SampleWindow(const float* values, SampleRange range, std::vector<float>& sample,
                    std::vector<float>& scratch) {
  sample.assign(values, values + kWindowSample);
  scratch.resize(kWindowSample);
  Window window;
  window.lo = -kInfinity;
  window.hi = kInfinity;
  const int64_t top = range.top();
  // The smallest `top` (hi + 1 when capped) in front, then lo among them.
  if (top * 4 <= kWindowSample) {
    SmallestFirst(sample, top, scratch);
  } else if (range.capped()) {
    std::nth_element(sample.begin(), sample.begin() + range.hi, sample.end());
  }
  if (range.capped()) window.hi = sample[static_cast<size_t>(range.hi)];
  if (range.bounded()) {
    std::nth_element(sample.begin(), sample.begin() + range.lo, sample.begin() + top);
    window.lo = sample[static_cast<size_t>(range.lo)];
  }
  window.bounded = range.bounded();
  return window;
}

Window ColumnReducer::WindowOf(const float* values, int attempt) {
  return SampleWindow(values, SampleRangeOf(span_, rows_, attempt), sample_, scratch_);
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

ColumnReducer::Buckets ColumnReducer::CountBuckets() {
  // Buckets of equal width between the window's least and largest values: a
  // monotone map, so each rank falls in one bucket.
  const float* values = window_.data();
  Buckets b;
  const auto [least, largest] = LeastAndLargest(values, kept_);
  b.least = least;
  b.count = std::clamp<int64_t>(
      static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(kept_))) / 2, 16, int64_t{1} << 16);
  const double range = static_cast<double>(largest) - b.least;
  b.scale = range > 0 && std::isfinite(range)
                ? static_cast<float>(b.count - 1) / static_cast<float>(range)
                : 0.0f;
  counts_.assign(static_cast<size_t>(b.count), 0);
  bucket_.resize(static_cast<size_t>(kept_));
  // Local pointers and count: the counts' stores could otherwise alias them.
  int32_t* bucket = bucket_.data();
  int64_t* counts = counts_.data();
  const int64_t kept = kept_;
  for (int64_t i = 0; i < kept; ++i) bucket[i] = b.Of(values[i]);
  for (int64_t i = 0; i < kept; ++i) ++counts[bucket[i]];
  return b;
}

void ColumnReducer::PlaceOrderStatistics() {
  CountBuckets();
  // The bucket of each needed rank, and the rank's place among its values.
  slot_of_.assign(counts_.size(), -1);
  slots_.clear();
  placements_.clear();
  int64_t bucket = 0, before = 0;  // values in the buckets under `bucket`
  for (const int64_t rank : needed_) {
    const int64_t r = rank - below_;
    while (before + counts_[static_cast<size_t>(bucket)] <= r) {
      before += counts_[static_cast<size_t>(bucket++)];
    }
    int32_t& slot = slot_of_[static_cast<size_t>(bucket)];
    if (slot < 0) {
      slot = static_cast<int32_t>(slots_.size());
      slots_.push_back({bucket, 0, 0});
    }
    placements_.push_back({slot, r - before});
  }
  // The values of those buckets, each bucket's together, sorted.
  int64_t total = 0;
  for (Slot& s : slots_) {
    s.begin = s.end = total;
    total += counts_[static_cast<size_t>(s.bucket)];
  }
  gathered_.resize(static_cast<size_t>(total));
  const int32_t* bucket_of = bucket_.data();
  const int32_t* slot_of = slot_of_.data();
  const float* values = window_.data();
  float* gathered = gathered_.data();
  Slot* slots = slots_.data();
  const int64_t kept = kept_;
  for (int64_t i = 0; i < kept; ++i) {
    const int32_t slot = slot_of[bucket_of[i]];
    if (slot >= 0) gathered[slots[slot].end++] = values[i];
  }
  for (const Slot& s : slots_) std::sort(gathered_.begin() + s.begin, gathered_.begin() + s.end);
  placed_.clear();
  for (const auto& [slot, place] : placements_) {
    placed_.push_back(
        gathered_[static_cast<size_t>(slots_[static_cast<size_t>(slot)].begin + place)]);
  }
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
  // q is the window's: every value <= q is under the window or in it. Four
  // sums in a fixed order, without branches, in SSE pairs.
  typedef double Doubles2 __attribute__((vector_size(16)));
  const Doubles2 q2 = q - Doubles2{}, zero2 = {}, one2 = zero2 + 1.0;
  Doubles2 sums[2] = {}, counts[2] = {};
  const float* values = window_.data();
  int64_t i = 0;
  for (; i + 4 <= kept_; i += 4) {
    for (int half = 0; half < 2; ++half) {
      const Doubles2 x = {values[i + 2 * half], values[i + 2 * half + 1]};
      sums[half] += x <= q2 ? x : zero2;
      counts[half] += x <= q2 ? one2 : zero2;
    }
  }
  double sum = below_sum_ + sums[0][0] + sums[0][1] + sums[1][0] + sums[1][1];
  double count =
      static_cast<double>(below_) + counts[0][0] + counts[0][1] + counts[1][0] + counts[1][1];
  for (; i < kept_; ++i) {
    sum += values[i] <= q ? values[i] : 0.0;
    count += values[i] <= q ? 1 : 0;
  }
  return pricer::TailMean(sum, count, q, low);
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
