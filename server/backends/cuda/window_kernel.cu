// The order statistics by a window (LaunchWindowOrderStatistics,
// kernels.h): one thread block per column, the window in shared memory.
#include <cmath>
#include <cstdint>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>

#include "server/backends/cuda/column_errors.cuh"
#include "server/backends/cuda/kernels.h"
#include "server/model/order_window.h"
#include "server/model/statistics.h"

namespace pricer::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWindowItems = static_cast<int>(kWindowCapacity / kThreads);
static_assert(kWindowSample == kThreads, "one sample value per thread");
static_assert(kErrorThreads == kThreads, "the errors' sums are the block's");

// A float's bits mapped so that unsigned order is the floats' order.
__device__ uint32_t OrderedKey(float v) {
  const uint32_t b = __float_as_uint(v);
  return (b & 0x80000000u) != 0 ? ~b : (b | 0x80000000u);
}
__device__ float KeyValue(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) != 0 ? (k & 0x7fffffffu) : ~k);
}

struct WindowShared {
  union {
    cub::BlockRadixSort<float, kThreads, 1>::TempStorage sample_sort;
    cub::BlockRadixSort<float, kThreads, kWindowItems>::TempStorage window_sort;
    cub::BlockReduce<long long, kThreads>::TempStorage count;
    cub::BlockReduce<double, kThreads>::TempStorage sum;
  } temp;
  float sample[kWindowSample];
  float window[kWindowCapacity];
  int kept;
  long long below;
  double below_sum;
  long long total_count;
  double total_sum;
  double error_sum;  // ErrorShared::result
};

// The block's sums of `count` and `sum`, in s.total_count and s.total_sum
// for every thread.
__device__ void BlockSums(WindowShared& s, long long count, double sum) {
  const long long c = cub::BlockReduce<long long, kThreads>(s.temp.count).Sum(count);
  __syncthreads();
  const double d = cub::BlockReduce<double, kThreads>(s.temp.sum).Sum(sum);
  if (threadIdx.x == 0) s.total_count = c, s.total_sum = d;
  __syncthreads();
}

// The order statistic of `rank` of the column, by bisection over the keys:
// the least key with more than `rank` values at or under it.
__device__ float SelectRank(WindowShared& s, const float* column, int64_t paths, int64_t rank) {
  uint32_t lo = 0, hi = 0xffffffffu;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    long long count = 0;
    for (int64_t p = threadIdx.x; p < paths; p += kThreads) count += OrderedKey(column[p]) <= mid;
    BlockSums(s, count, 0);
    if (s.total_count > rank) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
    __syncthreads();  // every thread has read s.total_count
  }
  return KeyValue(lo);
}

// Fills the window of `attempt`: s.below and s.below_sum of the values
// under it, s.kept values in it (those past kWindowCapacity counted, not
// kept). Whether it covers the ranks.
__device__ bool FillWindow(WindowShared& s, const float* column, int64_t paths, RankSpan span,
                           int attempt) {
  const SampleRange range = SampleRangeOf(span, paths, attempt);
  const float lo = range.bounded() ? s.sample[range.lo] : -INFINITY;
  const float hi = range.capped() ? s.sample[range.hi] : INFINITY;
  if (threadIdx.x == 0) s.kept = 0;
  __syncthreads();
  long long below = 0;
  double below_sum = 0;
  for (int64_t p = threadIdx.x; p < paths; p += kThreads) {
    const float v = column[p];
    if (v < lo) {
      ++below;
      below_sum += v;
    } else if (v <= hi) {
      const int at = atomicAdd(&s.kept, 1);
      if (at < kWindowCapacity) s.window[at] = v;
    }
  }
  BlockSums(s, below, below_sum);
  if (threadIdx.x == 0) s.below = s.total_count, s.below_sum = s.total_sum;
  __syncthreads();
  const bool covers = s.kept <= kWindowCapacity && WindowCovers(span, s.below, s.kept);
  __syncthreads();  // every thread has read s.kept before the next attempt resets it
  return covers;
}

// Sorts the window's s.kept values in place (the rest of it padded with
// +infinity, which sorts last).
__device__ void SortWindow(WindowShared& s) {
  float keys[kWindowItems];
  for (int i = 0; i < kWindowItems; ++i) {
    const int at = static_cast<int>(threadIdx.x) * kWindowItems + i;
    keys[i] = at < s.kept ? s.window[at] : INFINITY;
  }
  __syncthreads();
  cub::BlockRadixSort<float, kThreads, kWindowItems>(s.temp.window_sort).Sort(keys);
  for (int i = 0; i < kWindowItems; ++i) {
    s.window[static_cast<int>(threadIdx.x) * kWindowItems + i] = keys[i];
  }
  __syncthreads();
}

// The column's order statistic of `rank`: from the window when it holds it,
// else by bisection over the whole column.
__device__ double RankValue(WindowShared& s, const float* column, int64_t paths, bool windowed,
                            int64_t rank) {
  if (windowed && rank >= s.below && rank < s.below + s.kept) return s.window[rank - s.below];
  return SelectRank(s, column, paths, rank);
}

// ES's tail mean (TailMean, statistics.h) at quantile q of rank `low`, from
// the column's values <= q: those under the window and those of the sorted
// window up to q, or the whole column's.
__device__ double EsTailMean(WindowShared& s, const float* column, int64_t paths, bool windowed,
                             double q, int64_t low) {
  long long n = 0;
  double sum = 0;
  if (windowed) {
    for (int i = threadIdx.x; i < s.kept; i += kThreads) {
      const double v = s.window[i];
      if (v <= q) ++n, sum += v;
    }
  } else {
    for (int64_t p = threadIdx.x; p < paths; p += kThreads) {
      const double v = column[p];
      if (v <= q) ++n, sum += v;
    }
  }
  BlockSums(s, n, sum);
  const double below = windowed ? static_cast<double>(s.below) : 0.0;
  const double below_sum = windowed ? s.below_sum : 0.0;
  const double mean =
      TailMean(below_sum + s.total_sum, below + static_cast<double>(s.total_count), q, low);
  __syncthreads();  // s.total_* are reused by the next level
  return mean;
}

// One thread block per column. Four blocks an SM: 64 registers (ptxas,
// sm_90; 160 bytes spilled) where the compiler's own choice of 102 let two
// run, the occupancy that left the kernel latency-bound under ncu. Measured
// on an H200, the example's stats job: two blocks 0.399 s, three 0.363 s,
// four 0.353 s (docs/BENCHMARKS.md).
__global__ void __launch_bounds__(kThreads, 4)
    WindowOrderStatisticsKernel(const float* sc, int64_t paths, RankSpan span,
                                const OrderLevel* levels, int count, const double* v0,
                                double discount, double* out, int64_t stride, ErrorArgs errors) {
  __shared__ WindowShared s;
  const int64_t j = blockIdx.x;
  const float* column = sc + j * paths;
  float first[1] = {column[threadIdx.x]};
  cub::BlockRadixSort<float, kThreads, 1>(s.temp.sample_sort).Sort(first);
  s.sample[threadIdx.x] = first[0];
  __syncthreads();
  bool windowed = false;
  for (int attempt = 0; attempt < kWindowAttempts && !windowed; ++attempt) {
    windowed = FillWindow(s, column, paths, span, attempt);
  }
  if (windowed) SortWindow(s);
  auto value_at = [&](int64_t rank) { return RankValue(s, column, paths, windowed, rank); };
  for (int l = 0; l < count; ++l) {
    const OrderLevel level = levels[l];
    // From the sorted window by the arithmetic the cpu reducer runs, or by
    // bisection.
    double q;
    if (windowed) {
      q = WindowQuantile(s.window, s.below, level.low, level.fraction);
    } else {
      const double low = value_at(level.low);
      q = level.fraction == 0 ? low
                              : InterpolateQuantile(low, value_at(level.low + 1), level.fraction);
    }
    if (errors.out != nullptr) {
      // The window is sorted, and every value under it is under q.
      auto sorted_count = [&](double at) -> int64_t {
        return windowed ? s.below + SortedCountAtOrUnder(s.window, s.kept, at) : -1;
      };
      LevelErrors(ErrorShared{&s.temp.sum, &s.error_sum}, column, paths, level, l, q, v0[j],
                  discount, errors, j, stride, value_at, sorted_count);
    }
    const double value =
        level.kind == kQuantile ? q
        : level.kind == kValueAtRisk
            ? v0[j] - discount * q
            : v0[j] - discount * EsTailMean(s, column, paths, windowed, q, level.low);
    if (threadIdx.x == 0) out[l * stride + j] = value;
  }
}

}  // namespace

bool WindowApplies(RankSpan span, int64_t paths) {
  if (!WindowFromSample(span, paths)) return false;
  const SampleRange range = SampleRangeOf(span, paths, 0);
  const int64_t samples = range.top() - (range.bounded() ? range.lo : 0);
  // Expected values in the window: samples / kWindowSample of the column.
  return samples * paths * 3 <= kWindowCapacity * kWindowSample * 2;
}

cudaError_t LaunchWindowOrderStatistics(const float* sc, int64_t paths, int64_t columns,
                                        RankSpan span, const OrderLevel* levels, int count,
                                        const double* v0, double discount, double* out,
                                        int64_t stride, const ErrorArgs& errors,
                                        cudaStream_t stream) {
  if (columns == 0 || count == 0) return cudaSuccess;
  WindowOrderStatisticsKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(
      sc, paths, span, levels, count, v0, discount, out, stride, errors);
  return cudaGetLastError();
}

}  // namespace pricer::cuda
