// The Monte Carlo errors of a column on the device, as the cpu's
// ColumnErrors defines and computes them (server/model/statistic_errors.h),
// through the arithmetic both share (server/model/interval_ranks.h): what
// the order statistics kernels (window_kernel.cu, kernels.cu) and the
// moments' errors (column_errors.cu) run, one thread block of kErrorThreads
// per column, on SC in place.
#pragma once

#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "server/backends/cuda/kernels.h"
#include "server/model/interval_ranks.h"

namespace pricer::cuda {

inline constexpr int kErrorThreads = 256;
using ErrorSum = cub::BlockReduce<double, kErrorThreads>;

// A block's shared state for the sums below.
struct ErrorShared {
  ErrorSum::TempStorage* temp;
  double* result;
};

// The block's sum of `x`, in every thread.
__device__ inline double BlockSum(ErrorShared shared, double x) {
  const double total = ErrorSum(*shared.temp).Sum(x);
  if (threadIdx.x == 0) *shared.result = total;
  __syncthreads();
  const double sum = *shared.result;
  __syncthreads();  // every thread has read it before the next sum
  return sum;
}

// Two figures of a unit at once (MomentErrorsKernel's one pass): what
// ForEachUnit's pair mean needs of them.
struct TwoFigures {
  double first, second;
};
__device__ inline TwoFigures operator+(TwoFigures x, TwoFigures y) {
  return {x.first + y.first, x.second + y.second};
}
__device__ inline TwoFigures operator*(double k, TwoFigures x) {
  return {k * x.first, k * x.second};
}

// add(mean of f over unit u) for this thread's units: f of a path, or the
// mean over a pair (an odd last path alone).
template <typename F, typename Add>
__device__ void ForEachUnit(const float* column, int64_t paths, bool antithetic, F f, Add add) {
  const int64_t units = UnitsOf(paths, antithetic);
  for (int64_t u = threadIdx.x; u < units; u += kErrorThreads) {
    if (!antithetic) {
      add(f(static_cast<double>(column[u])));
    } else {
      const int64_t p = 2 * u;
      add(p + 1 < paths
              ? 0.5 * (f(static_cast<double>(column[p])) + f(static_cast<double>(column[p + 1])))
              : f(static_cast<double>(column[p])));
    }
  }
}

// The standard error of the units' means of f, summed less `shift`.
template <typename F>
__device__ double UnitError(ErrorShared shared, const float* column, int64_t paths, bool antithetic,
                            double shift, F f) {
  double sum = 0, squares = 0;
  ForEachUnit(column, paths, antithetic, f, [&](double v) {
    const double d = v - shift;
    sum += d;
    squares += d * d;
  });
  sum = BlockSum(shared, sum);
  squares = BlockSum(shared, squares);
  return UnitStandardError(sum, squares, UnitsOf(paths, antithetic));
}

// The count of values <= `q` among `count` sorted ones (every thread the
// same, by bisection).
__device__ inline int64_t SortedCountAtOrUnder(const float* sorted, int64_t count, double q) {
  int64_t lo = 0, hi = count;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<double>(sorted[mid]) <= q) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The errors of order level `l` of column j, whose estimate (the quantile of
// SC) is q, into errors.out (ErrorArgs): a quantile's or VaR's interval
// bounds from value_at(rank), the column's order statistic of that rank; an
// ES's standard error. sorted_count(q): the count of the column's values <=
// q where the caller has them sorted (the window, the sorted column), else
// -1; with independent paths that count is the units' (no pass over the
// column).
template <typename ValueAt, typename SortedCount>
__device__ void LevelErrors(ErrorShared shared, const float* column, int64_t paths,
                            const OrderLevel& level, int l, double q, double v0, double discount,
                            const ErrorArgs& errors, int64_t j, int64_t stride, ValueAt value_at,
                            SortedCount sorted_count) {
  double* first_row = errors.out + (2 * l) * stride + j;
  double* second_row = first_row + stride;
  if (level.kind == kExpectedShortfall) {
    const double scale = discount / level.level;
    const double se = UnitError(shared, column, paths, errors.antithetic, 0.0,
                                [=](double x) { return scale * fmin(x - q, 0.0); });
    if (threadIdx.x == 0) *first_row = se;
    return;
  }
  const int64_t counted = errors.antithetic ? -1 : sorted_count(q);
  UnitCounts counts{counted, 0};
  if (counted < 0) {
    double whole = 0, half = 0;
    ForEachUnit(
        column, paths, errors.antithetic, [=](double x) { return x <= q ? 1.0 : 0.0; },
        [&](double share) {
          whole += share == 1.0;
          half += share == 0.5;
        });
    counts = {static_cast<int64_t>(BlockSum(shared, whole)),
              static_cast<int64_t>(BlockSum(shared, half))};
  }
  const double sd = CountDeviation(counts, UnitsOf(paths, errors.antithetic), errors.antithetic);
  const RankSpan ranks = IntervalRanksOf(level.level, paths, level.low, errors.z, sd);
  const double lower = fmin(value_at(ranks.first), q);
  const double upper = fmax(value_at(ranks.last), q);
  if (threadIdx.x != 0) return;
  if (level.kind == kQuantile) {
    *first_row = lower;
    *second_row = upper;
  } else {  // VaR = V0 - exp(-r T) quantile: the upper bound from the lower
    *first_row = v0 - discount * upper;
    *second_row = v0 - discount * lower;
  }
}

}  // namespace pricer::cuda
