// The standard errors of the mean and stddev (LaunchMomentErrors, kernels.h):
// one thread block per column, two passes over its units.
#include <cstdint>

#include "server/backends/cuda/column_errors.cuh"
#include "server/backends/cuda/kernels.h"

namespace pricer::cuda {
namespace {

// se(mean): of the units' means of x; se(stddev) = se(variance) / (2
// stddev) (the delta method), of the units' means of (x - mean)^2.
__global__ void __launch_bounds__(kErrorThreads)
    MomentErrorsKernel(const float* sc, int64_t paths, bool antithetic, const double* moments,
                       double* out, int64_t stride) {
  __shared__ ErrorSum::TempStorage temp;
  __shared__ double result;
  const ErrorShared shared{&temp, &result};
  const int64_t j = blockIdx.x;
  const float* column = sc + j * paths;
  const double mean = moments[j], stddev = moments[stride + j];
  const double mean_se =
      UnitError(shared, column, paths, antithetic, mean, [](double x) { return x; });
  const double variance_se = UnitError(shared, column, paths, antithetic, stddev * stddev,
                                       [mean](double x) { return (x - mean) * (x - mean); });
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
