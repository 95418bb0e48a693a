#include <cfloat>
#include <cstdint>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/util_type.cuh>

#include "server/backends/cuda/kernels.h"
#include "server/model/counter_rng.h"
#include "server/model/gbm.h"
#include "server/model/order_window.h"
#include "server/model/statistics.h"

namespace pricer::cuda {
namespace {

constexpr int kThreads = 256;

int64_t Blocks(int64_t items, int64_t per_block = kThreads) {
  return (items + per_block - 1) / per_block;
}

// One thread per (path, block of four issuers): one Philox call each.
__global__ void ShocksKernel(uint64_t seed, bool antithetic, int64_t paths, int64_t issuers,
                             float* z) {
  const int64_t blocks_per_path = (issuers + 3) / 4;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= paths * blocks_per_path) return;
  // Consecutive threads take consecutive paths of one issuer block, so the
  // column-major stores coalesce.
  const int64_t p = t % paths;
  const int64_t block = t / paths;
  float out[4];
  PathShocks4(seed, static_cast<uint64_t>(p), static_cast<uint32_t>(block), antithetic, out);
  for (int m = 0; m < 4 && block * 4 + m < issuers; ++m) z[(block * 4 + m) * paths + p] = out[m];
}

__global__ void TerminalPricesKernel(int64_t paths, int64_t issuers, const float* spot,
                                     const float* drift, const float* diffusion, float* x) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= paths * issuers) return;
  const int64_t i = t / paths;
  x[t] = TerminalPrice(spot[i], drift[i], diffusion[i], x[t]);
}

// One thread per four entries of a column (one Philox call), as UniformRow.
__global__ void GenerateScenariosKernel(uint64_t seed, float low, float high, int64_t rows,
                                        int64_t first, int64_t count, float* a) {
  const int64_t blocks_per_column = (rows + 3) / 4;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= count * blocks_per_column) return;
  const int64_t j = t / blocks_per_column;
  const int64_t block = t % blocks_per_column;
  const PhiloxCounter w = DrawBlock(seed, RandomStream::kScenarios,
                                    static_cast<uint64_t>(first + j), static_cast<uint32_t>(block));
  const float scale = high - low;
  for (int m = 0; m < 4 && block * 4 + m < rows; ++m) {
    a[j * rows + block * 4 + m] = low + scale * UniformOpen01(w.v[m]);
  }
}

// One thread block per column.
__global__ void PortfolioValuesKernel(const float* a, int64_t rows, const double* spot,
                                      double* v0) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const float* column = a + static_cast<int64_t>(blockIdx.x) * rows;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < rows; i += kThreads) sum += column[i] * spot[i];
  const double total = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) v0[blockIdx.x] = total;
}

struct Moments {
  double sum, squares;
  float min, max;
};

struct CombineMoments {
  __device__ Moments operator()(const Moments& a, const Moments& b) const {
    return Moments{a.sum + b.sum, a.squares + b.squares, fminf(a.min, b.min), fmaxf(a.max, b.max)};
  }
};

// One thread block per column: float64 sums shifted by the column's first
// value, as the cpu backend's ColumnMoments.
__global__ void MomentsKernel(const float* sc, int64_t paths, double* out, int64_t stride) {
  using Reduce = cub::BlockReduce<Moments, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const int64_t j = blockIdx.x;
  const float* column = sc + j * paths;
  const double shift = column[0];
  Moments m{0, 0, FLT_MAX, -FLT_MAX};
  for (int64_t p = threadIdx.x; p < paths; p += kThreads) {
    const float x = column[p];
    const double d = static_cast<double>(x) - shift;
    m.sum += d;
    m.squares += d * d;
    m.min = fminf(m.min, x);
    m.max = fmaxf(m.max, x);
  }
  const Moments total = Reduce(storage).Reduce(m, CombineMoments());
  if (threadIdx.x == 0) {
    const double n = static_cast<double>(paths);
    out[0 * stride + j] = ShiftedMean(shift, total.sum, n);
    out[1 * stride + j] = ShiftedStddev(total.sum, total.squares, n);
    out[2 * stride + j] = total.min;
    out[3 * stride + j] = total.max;
  }
}

__global__ void SegmentOffsetsKernel(int64_t paths, int* offsets) {
  const int k = static_cast<int>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k <= kSortColumns) offsets[k] = static_cast<int>(k * paths);
}

// The quantile at `level` of a sorted column.
__device__ double SortedQuantile(const float* sorted, int64_t paths, const OrderLevel& level) {
  const double low = sorted[level.low];
  if (level.fraction == 0 || level.low + 1 >= paths) return low;
  return InterpolateQuantile(low, sorted[level.low + 1], level.fraction);
}

// One thread block per column; the ES levels sum the sorted prefix of
// values <= their quantile.
__global__ void OrderStatisticsKernel(const float* sorted_columns, int64_t paths,
                                      const OrderLevel* levels, int count, const double* v0,
                                      double discount, double* out, int64_t stride) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ int64_t tail;
  const int64_t j = blockIdx.x;
  const float* sorted = sorted_columns + j * paths;
  for (int l = 0; l < count; ++l) {
    const OrderLevel level = levels[l];
    const double q = SortedQuantile(sorted, paths, level);
    if (level.kind != kExpectedShortfall) {
      if (threadIdx.x == 0) {
        out[l * stride + j] = level.kind == kQuantile ? q : v0[j] - discount * q;
      }
      continue;
    }
    // The values <= q are the first `tail` of the column: at least
    // level.low + 1 of them, found by a binary search above.
    if (threadIdx.x == 0) {
      int64_t lo = level.low + 1, hi = paths;  // sorted[lo - 1] <= q
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (static_cast<double>(sorted[mid]) <= q) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      tail = lo;
    }
    __syncthreads();
    const int64_t n = tail;
    double sum = 0;
    for (int64_t p = threadIdx.x; p < n; p += kThreads) sum += sorted[p];
    const double total = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) out[l * stride + j] = v0[j] - discount * (total / static_cast<double>(n));
    __syncthreads();  // `tail` and `storage` are reused by the next level
  }
}

// --- Order statistics by a window (LaunchWindowOrderStatistics).

constexpr int kWindowItems = static_cast<int>(kWindowCapacity / kThreads);
static_assert(kWindowSample == kThreads, "one sample value per thread");

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

// One thread block per column.
__global__ void __launch_bounds__(kThreads)
    WindowOrderStatisticsKernel(const float* sc, int64_t paths, RankSpan span,
                                const OrderLevel* levels, int count, const double* v0,
                                double discount, double* out, int64_t stride) {
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
  for (int l = 0; l < count; ++l) {
    const OrderLevel level = levels[l];
    double q;
    if (windowed) {
      q = WindowQuantile(s.window, s.below, level.low, level.fraction);
    } else {
      const double low = SelectRank(s, column, paths, level.low);
      q = level.fraction == 0
              ? low
              : InterpolateQuantile(low, SelectRank(s, column, paths, level.low + 1),
                                    level.fraction);
    }
    if (level.kind != kExpectedShortfall) {
      if (threadIdx.x == 0) {
        out[l * stride + j] = level.kind == kQuantile ? q : v0[j] - discount * q;
      }
      continue;
    }
    // ES: the mean of the values <= q, those under the window and those of
    // the sorted window up to q, or the whole column's.
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
    if (threadIdx.x == 0) {
      const double below = windowed ? static_cast<double>(s.below) : 0.0;
      const double below_sum = windowed ? s.below_sum : 0.0;
      out[l * stride + j] = v0[j] - discount * ((below_sum + s.total_sum) /
                                                (below + static_cast<double>(s.total_count)));
    }
    __syncthreads();  // s.total_* are reused by the next level
  }
}

}  // namespace

cudaError_t LaunchShocks(uint64_t seed, bool antithetic, int64_t paths, int64_t issuers, float* z,
                         cudaStream_t stream) {
  const int64_t threads = paths * ((issuers + 3) / 4);
  ShocksKernel<<<Blocks(threads), kThreads, 0, stream>>>(seed, antithetic, paths, issuers, z);
  return cudaGetLastError();
}

cudaError_t LaunchTerminalPrices(int64_t paths, int64_t issuers, const float* spot,
                                 const float* drift, const float* diffusion, float* x,
                                 cudaStream_t stream) {
  TerminalPricesKernel<<<Blocks(paths * issuers), kThreads, 0, stream>>>(paths, issuers, spot,
                                                                         drift, diffusion, x);
  return cudaGetLastError();
}

cudaError_t LaunchGenerateScenarios(uint64_t seed, float low, float high, int64_t rows,
                                    int64_t first, int64_t count, float* a, cudaStream_t stream) {
  const int64_t threads = count * ((rows + 3) / 4);
  GenerateScenariosKernel<<<Blocks(threads), kThreads, 0, stream>>>(seed, low, high, rows, first,
                                                                    count, a);
  return cudaGetLastError();
}

cudaError_t LaunchPortfolioValues(const float* a, int64_t rows, int64_t columns, const double* spot,
                                  double* v0, cudaStream_t stream) {
  if (columns == 0) return cudaSuccess;
  PortfolioValuesKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(a, rows, spot, v0);
  return cudaGetLastError();
}

cudaError_t LaunchMoments(const float* sc, int64_t paths, int64_t columns, double* out,
                          int64_t stride, cudaStream_t stream) {
  if (columns == 0) return cudaSuccess;
  MomentsKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(sc, paths, out, stride);
  return cudaGetLastError();
}

cudaError_t LaunchSegmentOffsets(int64_t paths, int* offsets, cudaStream_t stream) {
  SegmentOffsetsKernel<<<Blocks(kSortColumns + 1), kThreads, 0, stream>>>(paths, offsets);
  return cudaGetLastError();
}

int64_t SortScratchBytes(int64_t paths) {
  (void)paths;
  // With a DoubleBuffer, DeviceSegmentedSort needs scratch only to partition
  // its segments, and none of that for kSortColumns (256) segments, below its
  // partitioning threshold (the query returns a few hundred bytes). The bound
  // leaves room for other CUB versions; SortColumns checks it.
  return int64_t{1} << 20;
}

cudaError_t SortColumns(const float* in, int64_t paths, int64_t columns, const int* offsets,
                        float* buffer0, float* buffer1, void* scratch, int64_t scratch_bytes,
                        const float** sorted, cudaStream_t stream) {
  const int64_t items = paths * columns;
  if (cudaError_t e = cudaMemcpyAsync(buffer0, in, static_cast<size_t>(items) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream);
      e != cudaSuccess) {
    return e;
  }
  cub::DoubleBuffer<float> keys(buffer0, buffer1);
  size_t needed = 0;
  if (cudaError_t e = cub::DeviceSegmentedSort::SortKeys(nullptr, needed, keys, items, columns,
                                                         offsets, offsets + 1, stream);
      e != cudaSuccess) {
    return e;
  }
  if (needed > static_cast<size_t>(scratch_bytes)) return cudaErrorMemoryAllocation;
  size_t available = static_cast<size_t>(scratch_bytes);
  if (cudaError_t e = cub::DeviceSegmentedSort::SortKeys(scratch, available, keys, items, columns,
                                                         offsets, offsets + 1, stream);
      e != cudaSuccess) {
    return e;
  }
  *sorted = keys.Current();
  return cudaSuccess;
}

cudaError_t LaunchOrderStatistics(const float* sorted, int64_t paths, int64_t columns,
                                  const OrderLevel* levels, int count, const double* v0,
                                  double discount, double* out, int64_t stride,
                                  cudaStream_t stream) {
  if (columns == 0 || count == 0) return cudaSuccess;
  OrderStatisticsKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(
      sorted, paths, levels, count, v0, discount, out, stride);
  return cudaGetLastError();
}

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
                                        int64_t stride, cudaStream_t stream) {
  if (columns == 0 || count == 0) return cudaSuccess;
  WindowOrderStatisticsKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(
      sc, paths, span, levels, count, v0, discount, out, stride);
  return cudaGetLastError();
}

}  // namespace pricer::cuda
