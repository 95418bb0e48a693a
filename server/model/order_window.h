// The window of a column's order statistics, the arithmetic both backends'
// reductions share: a column of SC needs a few exact order statistics (VaR
// 0.99 and ES 0.975 at P = 10,000: the lowest 2.5% and one rank), so the
// reduction reads a sample of the column (its first kWindowSample values),
// takes two of the sample's order statistics as bounds, and in its one pass
// over the column counts the values under the window and keeps those in it.
// An exact selection over the window alone then gives every needed rank,
// unless the sample misjudged the column: a wider window from the same
// sample, and at last the whole column. The cpu reducer
// (server/backends/cpu/column_reducer.h) runs these functions on the host,
// the cuda kernels on the device; tests/model/order_window_test.cc covers
// them on the cpu.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "server/model/host_device.h"
#include "server/model/statistics.h"

namespace pricer {

// Values sampled per column (its first ones: a column's rows are paths,
// independent draws or antithetic pairs, so they sample it as well as any).
inline constexpr int64_t kWindowSample = 256;
// Attempts from the sample (0, 1) before the whole column.
inline constexpr int kWindowAttempts = 2;

// The needed ranks first..last (0-based, of the column's sorted values).
struct RankSpan {
  int64_t first = 0, last = 0;
};

// The window's bounds as indices into the sorted sample: its values v with
// sample[lo] <= v <= sample[hi]. lo < 0: open below (every value under hi);
// hi >= kWindowSample: open above.
struct SampleRange {
  int64_t lo = 0, hi = 0;
  PRICER_HOST_DEVICE bool bounded() const { return lo >= 0; }
  PRICER_HOST_DEVICE bool capped() const { return hi < kWindowSample; }
  // Sorted sample values the bounds read: sample[0, top).
  PRICER_HOST_DEVICE int64_t top() const { return hi + 1 < kWindowSample ? hi + 1 : kWindowSample; }
};

// The bounds for `ranks` of `rows` on `attempt`: each bound's expected
// sample rank widened by a multiple of its binomial standard deviation, 3
// plus 3 values on attempt 0 (for VaR 0.99 and ES 0.975 at P = 10,000 the
// binomial tail puts about 1 column in 10,000 outside), 8 plus 16 on
// attempt 1.
PRICER_HOST_DEVICE inline SampleRange SampleRangeOf(RankSpan ranks, int64_t rows, int attempt) {
  const double widen = attempt == 0 ? 3 : 8, extra = attempt == 0 ? 3 : 16;
  const double n = static_cast<double>(kWindowSample);
  auto spread = [n](double expected) {
    const double f = expected <= 0 ? 0.0 : expected >= n ? 1.0 : expected / n;
    return sqrt(n * f * (1 - f));
  };
  const double low = static_cast<double>(ranks.first) * n / static_cast<double>(rows);
  const double high = static_cast<double>(ranks.last + 1) * n / static_cast<double>(rows);
  return {static_cast<int64_t>(floor(low - widen * spread(low) - extra)),
          static_cast<int64_t>(ceil(high + widen * spread(high) + extra))};
}

// Whether a window from the sample pays for `ranks` of `rows`: the column
// holds at least 8 samples' worth and attempt 0 keeps at most about a
// quarter of it (the lower tail of VaR and ES is a few percent). Otherwise
// the reduction selects over the whole column.
PRICER_HOST_DEVICE inline bool WindowFromSample(RankSpan ranks, int64_t rows) {
  if (rows < 8 * kWindowSample) return false;
  const SampleRange range = SampleRangeOf(ranks, rows, 0);
  const int64_t lo = range.lo > 0 ? range.lo : 0;
  const int64_t hi = range.hi < kWindowSample ? range.hi : kWindowSample;
  return (hi - lo) * 4 <= kWindowSample;
}

// Whether a window with `below` values under it and `kept` in it holds
// every needed rank.
PRICER_HOST_DEVICE inline bool WindowCovers(RankSpan ranks, int64_t below, int64_t kept) {
  return below <= ranks.first && ranks.last < below + kept;
}

// The quantile at `rank` from the window's values sorted ascending, `below`
// values under it (the window covers rank.low and, when rank.fraction > 0,
// rank.low + 1).
PRICER_HOST_DEVICE inline double WindowQuantile(const float* sorted, int64_t below, int64_t low,
                                                double fraction) {
  const double x = sorted[low - below];
  return fraction == 0 ? x : InterpolateQuantile(x, sorted[low + 1 - below], fraction);
}

// The ranks of the order statistics a selection needs over `rows` values:
// each quantile, VaR and ES level's x_(k) and, when it interpolates, x_(k+1);
// ascending, each once. Empty when it needs none.
std::vector<int64_t> NeededRanks(const StatisticsSelection& selection, int64_t rows);
// The first and last of NeededRanks; RankSpan{} when it needs none.
RankSpan NeededSpan(const StatisticsSelection& selection, int64_t rows);

}  // namespace pricer
