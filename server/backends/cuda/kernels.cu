#include <cfloat>
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/util_type.cuh>

#include "server/backends/cuda/column_errors.cuh"
#include "server/backends/cuda/kernels.h"
#include "server/model/counter_rng.h"
#include "server/model/gbm.h"
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

__global__ void InstrumentValuesKernel(int64_t paths, int64_t count, const InstrumentTerms* terms,
                                       const float* st, float* v) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= paths * count) return;
  const InstrumentTerms& terms_k = terms[t / paths];
  v[t] = static_cast<float>(InstrumentValue(terms_k, st[terms_k.issuer * paths + t % paths]));
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

__global__ void ToDoublesKernel(const float* a, int64_t count, double* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < count) out[i] = a[i];
}

// One thread block per column.
__global__ void CovarianceMomentsKernel(const double* a, const double* products,
                                        const double* means, int64_t issuers, int64_t paths,
                                        double* out, int64_t stride) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const int64_t j = blockIdx.x;
  const double* x = a + j * issuers;
  const double* sx = products + j * issuers;
  double mean = 0, variance = 0;
  for (int64_t i = threadIdx.x; i < issuers; i += kThreads) {
    mean += means[i] * x[i];
    variance += x[i] * sx[i];
  }
  mean = Reduce(storage).Sum(mean);
  __syncthreads();  // the storage again
  variance = Reduce(storage).Sum(variance);
  if (threadIdx.x == 0) {
    out[stride + j] = mean;
    out[2 * stride + j] = paths > 1 ? sqrt(fmax(variance, 0.0)) : 0.0;
  }
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
// their tail.
__global__ void OrderStatisticsKernel(const float* sorted_columns, const float* sc, int64_t paths,
                                      const OrderLevel* levels, int count, const double* v0,
                                      double discount, double* out, int64_t stride,
                                      ErrorArgs errors) {
  static_assert(kErrorThreads == kThreads, "the errors' sums are the block's");
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ double error_sum;
  const int64_t j = blockIdx.x;
  const float* sorted = sorted_columns + j * paths;
  for (int l = 0; l < count; ++l) {
    const OrderLevel level = levels[l];
    const double q = SortedQuantile(sorted, paths, level);
    if (errors.out != nullptr) {
      LevelErrors(
          ErrorShared{&storage, &error_sum}, sc + j * paths, paths, level, l, q, v0[j], discount,
          errors, j, stride, [sorted](int64_t rank) -> double { return sorted[rank]; },
          [sorted, paths](double at) { return SortedCountAtOrUnder(sorted, paths, at); });
    }
    if (level.kind != kExpectedShortfall) {
      if (threadIdx.x == 0) {
        out[l * stride + j] = level.kind == kQuantile ? q : v0[j] - discount * q;
      }
      continue;
    }
    // ES's tail (TailMean, statistics.h): the first k = low + 1 of the column.
    const int64_t k = level.low + 1;
    double sum = 0;
    for (int64_t p = threadIdx.x; p < k; p += kThreads) sum += sorted[p];
    const double total = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) out[l * stride + j] = v0[j] - discount * (total / static_cast<double>(k));
    __syncthreads();  // `storage` is reused by the next level
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

cudaError_t LaunchInstrumentValues(int64_t paths, int64_t count, const InstrumentTerms* terms,
                                   const float* st, float* v, cudaStream_t stream) {
  InstrumentValuesKernel<<<Blocks(paths * count), kThreads, 0, stream>>>(paths, count, terms, st,
                                                                         v);
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

cudaError_t LaunchToDoubles(const float* a, int64_t count, double* a_doubles, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  ToDoublesKernel<<<static_cast<unsigned>((count + kThreads - 1) / kThreads), kThreads, 0,
                    stream>>>(a, count, a_doubles);
  return cudaGetLastError();
}

cudaError_t LaunchCovarianceMoments(const double* a_doubles, const double* products,
                                    const double* means, int64_t issuers, int64_t columns,
                                    int64_t paths, double* out, int64_t stride,
                                    cudaStream_t stream) {
  if (columns == 0) return cudaSuccess;
  CovarianceMomentsKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(
      a_doubles, products, means, issuers, paths, out, stride);
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

cudaError_t LaunchOrderStatistics(const float* sorted, const float* sc, int64_t paths,
                                  int64_t columns, const OrderLevel* levels, int count,
                                  const double* v0, double discount, double* out, int64_t stride,
                                  const ErrorArgs& errors, cudaStream_t stream) {
  if (columns == 0 || count == 0) return cudaSuccess;
  OrderStatisticsKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(
      sorted, sc, paths, levels, count, v0, discount, out, stride, errors);
  return cudaGetLastError();
}

}  // namespace pricer::cuda
