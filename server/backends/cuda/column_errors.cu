// The standard errors of the mean and stddev (LaunchMomentErrors, kernels.h):
// one thread block per column, one pass over its units.
#include <cstdint>

#include "server/backends/cuda/column_errors.cuh"
#include "server/backends/cuda/kernels.h"

namespace pricer::cuda {
namespace {

// se(mean): of the units' means of x; se(stddev) = se(variance) / (2
// stddev) (the delta method), of the units' means of (x - mean)^2. One pass
// for both.
__global__ void __launch_bounds__(kErrorThreads)
    MomentErrorsKernel(const float* sc, int64_t paths, bool antithetic, const double* moments,
                       double* out, int64_t stride) {
  __shared__ ErrorSum::TempStorage temp;
  __shared__ double result;
  const ErrorShared shared{&temp, &result};
  const int64_t j = blockIdx.x;
  const float* column = sc + j * paths;
  const double mean = moments[j], stddev = moments[stride + j];
  const double variance = stddev * stddev;
  double sum1 = 0, squares1 = 0, sum2 = 0, squares2 = 0;
  ForEachUnit(
      column, paths, antithetic,
      [mean](double x) {
        return TwoFigures{x, (x - mean) * (x - mean)};
      },
      [&](TwoFigures unit) {
        const double d1 = unit.first - mean, d2 = unit.second - variance;
        sum1 += d1;
        squares1 += d1 * d1;
        sum2 += d2;
        squares2 += d2 * d2;
      });
  const int64_t units = UnitsOf(paths, antithetic);
  const double mean_se =
      UnitStandardError(BlockSum(shared, sum1), BlockSum(shared, squares1), units);
  const double variance_se =
      UnitStandardError(BlockSum(shared, sum2), BlockSum(shared, squares2), units);
  if (threadIdx.x == 0) {
    out[j] = mean_se;
    out[stride + j] = stddev > 0 ? variance_se / (2 * stddev) : 0.0;
  }
}

}  // namespace

cudaError_t LaunchMomentErrors(const float* sc, int64_t paths, int64_t columns, bool antithetic,
                               const double* moments, double* out, int64_t stride,
                               cudaStream_t stream) {
  if (columns == 0) return cudaSuccess;
  MomentErrorsKernel<<<static_cast<unsigned>(columns), kErrorThreads, 0, stream>>>(
      sc, paths, antithetic, moments, out, stride);
  return cudaGetLastError();
}

}  // namespace pricer::cuda
