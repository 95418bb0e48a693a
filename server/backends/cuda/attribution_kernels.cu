#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "server/backends/cuda/attribution_kernels.h"
#include "server/model/statistics.h"

namespace pricer::cuda {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(int64_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

__global__ void ByPathKernel(const float* x, int64_t paths, int64_t rows, float* by_path) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= paths * rows) return;
  const int64_t p = t / rows, r = t % rows;  // consecutive threads write one path's row
  by_path[t] = x[r * paths + p];
}

__global__ void TerminalPriceVegaKernel(const float* st, int64_t paths, int64_t issuers,
                                        double root_t, const double* sigma_t, float* shocks) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= paths * issuers) return;
  shocks[t] = static_cast<float>(TerminalPriceVega(st[t], root_t, sigma_t[t / paths], shocks[t]));
}

__global__ void DerivativesKernel(const InstrumentTerms* terms, int64_t rows, const float* st,
                                  const double* spot, const float* dst, int64_t paths, float* delta,
                                  float* vega) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= paths * rows) return;
  const int64_t p = t / rows;
  const InstrumentTerms term = terms[t % rows];
  const double s = st[term.issuer * paths + p];
  if (delta != nullptr) delta[t] = static_cast<float>(PathDelta(term, s, spot[term.issuer]));
  if (vega != nullptr) {
    vega[t] = static_cast<float>(PathVega(
        term, s, dst == nullptr ? 0.0 : static_cast<double>(dst[term.issuer * paths + p])));
  }
}

// A float's order as an unsigned key: a < b exactly when Key(a) < Key(b).
__device__ uint32_t Key(float v) {
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}
__device__ float FromKey(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) != 0 ? (k & 0x7fffffffu) : ~k);
}

using Reduce = cub::BlockReduce<int64_t, kThreads>;
using Scan = cub::BlockScan<int, kThreads>;

// The block's sum of `value`, in every thread.
__device__ int64_t BlockSum(int64_t value, Reduce::TempStorage& temp, int64_t* shared) {
  const int64_t total = Reduce(temp).Sum(value);
  if (threadIdx.x == 0) *shared = total;
  __syncthreads();
  const int64_t result = *shared;
  __syncthreads();
  return result;
}

// The order statistic of `rank` of `column`: the least key with more than
// `rank` values at or under it, one bit at a time from the top.
__device__ float SelectRank(const float* column, int64_t paths, int64_t rank,
                            Reduce::TempStorage& temp, int64_t* shared) {
  uint32_t prefix = 0;
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t candidate = prefix | ((1u << bit) - 1u);
    int64_t count = 0;
    for (int64_t p = threadIdx.x; p < paths; p += kThreads) count += Key(column[p]) <= candidate;
    if (BlockSum(count, temp, shared) <= rank) prefix |= 1u << bit;
  }
  return FromKey(prefix);
}

// One block per column: BandPaths (attribution.h) with the ranks of a
// stable sort, the ties at either end counted in path order by scans.
__global__ void __launch_bounds__(kThreads)
    BandPathsKernel(const float* sc, int64_t paths, TailBand band, int32_t* out) {
  __shared__ Reduce::TempStorage reduce;
  __shared__ Scan::TempStorage scan;
  __shared__ int64_t shared;
  const float* column = sc + static_cast<int64_t>(blockIdx.x) * paths;
  int32_t* band_paths = out + static_cast<int64_t>(blockIdx.x) * band.size();
  const float hi = SelectRank(column, paths, band.last, reduce, &shared);
  const float lo = band.bounded ? SelectRank(column, paths, band.first, reduce, &shared) : hi;
  int64_t under_lo = 0, under_hi = 0;
  for (int64_t p = threadIdx.x; p < paths; p += kThreads) {
    under_lo += column[p] < lo;
    under_hi += column[p] < hi;
  }
  under_lo = BlockSum(under_lo, reduce, &shared);
  under_hi = BlockSum(under_hi, reduce, &shared);
  const bool same = band.bounded && lo == hi;
  int64_t ties_lo = 0, ties_hi = 0, written = 0;  // before this chunk
  for (int64_t base = 0; base < paths; base += kThreads) {
    const int64_t p = base + threadIdx.x;
    const float v = p < paths ? column[p] : 0.0f;
    const int at_lo = p < paths && band.bounded && v == lo;
    const int at_hi = p < paths && v == hi && !same;
    int before_lo, before_hi, total_lo, total_hi;
    Scan(scan).ExclusiveSum(at_lo, before_lo, total_lo);
    __syncthreads();
    Scan(scan).ExclusiveSum(at_hi, before_hi, total_hi);
    __syncthreads();
    auto inside = [&](int64_t rank) { return band.first <= rank && rank <= band.last; };
    int take = 0;
    if (at_lo) {
      take = inside(under_lo + ties_lo + before_lo);
    } else if (at_hi) {
      take = inside(under_hi + ties_hi + before_hi);
    } else if (p < paths) {
      take = v < hi && (!band.bounded || v > lo);
    }
    int position, taken;
    Scan(scan).ExclusiveSum(take, position, taken);
    __syncthreads();
    if (take) band_paths[written + position] = static_cast<int32_t>(p);
    ties_lo += total_lo;
    ties_hi += total_hi;
    written += taken;
  }
}

// One block per column, a thread per row: the row's sums over the band in
// path order, as ColumnAttribution adds them.
__global__ void GatherKernel(GatherArgs args, float* values, float* errors, double* shares) {
  const int64_t j = blockIdx.x;
  const int32_t* band = args.band_paths + j * args.n;
  const double count = static_cast<double>(args.n);
  for (int64_t r = threadIdx.x; r < args.rows; r += kThreads) {
    double sum = 0, squares = 0;
    for (int64_t k = 0; k < args.n; ++k) {
      const double v = args.source[static_cast<int64_t>(band[k]) * args.rows + r];
      sum += v;
      if (errors != nullptr) squares += v * v;
    }
    const double a = args.positions[j * args.rows + r];
    const double today = args.today == nullptr ? 0.0 : args.today[r];
    const double share = -a * (args.discount * sum / count - today);
    if (values != nullptr) values[j * args.rows + r] = static_cast<float>(share);
    if (shares != nullptr) shares[j * args.rows + r] = share;
    if (errors != nullptr) {
      errors[j * args.rows + r] = static_cast<float>(
          fabs(a) * args.discount * ShiftedStddev(sum, squares, count) / sqrt(count));
    }
  }
}

__global__ void IssuerSumsKernel(const double* shares, int64_t rows, int64_t columns,
                                 const int32_t* offsets, const int32_t* issuer_rows,
                                 int64_t issuers, float* out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= issuers * columns) return;
  const int64_t j = t / issuers, i = t % issuers;
  double sum = 0;
  for (int32_t k = offsets[i]; k < offsets[i + 1]; ++k) sum += shares[j * rows + issuer_rows[k]];
  out[t] = static_cast<float>(sum);
}

// One block per column, a thread per issuer.
__global__ void SensitivityErrorsKernel(GatherArgs args, const int32_t* offsets,
                                        const int32_t* issuer_rows, int64_t issuers, float* out) {
  const int64_t j = blockIdx.x;
  const int32_t* band = args.band_paths + j * args.n;
  const float* a = args.positions + j * args.rows;
  const double count = static_cast<double>(args.n);
  for (int64_t i = threadIdx.x; i < issuers; i += kThreads) {
    double sum = 0, squares = 0;
    for (int64_t k = 0; k < args.n; ++k) {
      const float* row = args.source + static_cast<int64_t>(band[k]) * args.rows;
      double y = 0;
      for (int32_t m = offsets[i]; m < offsets[i + 1]; ++m) {
        const int32_t r = issuer_rows[m];
        y += a[r] * static_cast<double>(row[r]);
      }
      sum += y;
      squares += y * y;
    }
    out[j * issuers + i] =
        static_cast<float>(args.discount * ShiftedStddev(sum, squares, count) / sqrt(count));
  }
}

}  // namespace

cudaError_t LaunchByPath(const float* x, int64_t paths, int64_t rows, float* by_path,
                         cudaStream_t stream) {
  ByPathKernel<<<Blocks(paths * rows), kThreads, 0, stream>>>(x, paths, rows, by_path);
  return cudaGetLastError();
}

cudaError_t LaunchTerminalPriceVega(const float* st, int64_t paths, int64_t issuers, double root_t,
                                    const double* sigma_t, float* shocks, cudaStream_t stream) {
  TerminalPriceVegaKernel<<<Blocks(paths * issuers), kThreads, 0, stream>>>(
      st, paths, issuers, root_t, sigma_t, shocks);
  return cudaGetLastError();
}

cudaError_t LaunchDerivatives(const InstrumentTerms* terms, int64_t rows, const float* st,
                              const double* spot, const float* dst_dsigma, int64_t paths,
                              float* delta, float* vega, cudaStream_t stream) {
  DerivativesKernel<<<Blocks(paths * rows), kThreads, 0, stream>>>(terms, rows, st, spot,
                                                                   dst_dsigma, paths, delta, vega);
  return cudaGetLastError();
}

cudaError_t LaunchBandPaths(const float* sc, int64_t paths, int64_t columns, TailBand band,
                            int32_t* out, cudaStream_t stream) {
  if (columns == 0) return cudaSuccess;
  BandPathsKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(sc, paths, band, out);
  return cudaGetLastError();
}

cudaError_t LaunchGather(const GatherArgs& args, int64_t columns, float* values, float* errors,
                         double* shares, cudaStream_t stream) {
  if (columns == 0) return cudaSuccess;
  GatherKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(args, values, errors,
                                                                        shares);
  return cudaGetLastError();
}

cudaError_t LaunchIssuerSums(const double* shares, int64_t rows, int64_t columns,
                             const int32_t* issuer_offsets, const int32_t* issuer_rows,
                             int64_t issuers, float* out, cudaStream_t stream) {
  if (columns == 0) return cudaSuccess;
  IssuerSumsKernel<<<Blocks(issuers * columns), kThreads, 0, stream>>>(
      shares, rows, columns, issuer_offsets, issuer_rows, issuers, out);
  return cudaGetLastError();
}

cudaError_t LaunchSensitivityErrors(const GatherArgs& args, int64_t columns,
                                    const int32_t* issuer_offsets, const int32_t* issuer_rows,
                                    int64_t issuers, float* out, cudaStream_t stream) {
  if (columns == 0) return cudaSuccess;
  SensitivityErrorsKernel<<<static_cast<unsigned>(columns), kThreads, 0, stream>>>(
      args, issuer_offsets, issuer_rows, issuers, out);
  return cudaGetLastError();
}

}  // namespace pricer::cuda
