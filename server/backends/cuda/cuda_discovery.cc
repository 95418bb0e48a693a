// Finding the GPUs and sizing their budgets (declared in cuda_device.h).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/backends/cuda/cuda_device.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/backends/cuda/scoped_device.h"
#include "spdlog/spdlog.h"

namespace pricer {

absl::StatusOr<int> CudaDeviceCount() {
  int count = 0;
  RETURN_IF_ERROR(PRICER_CUDA_STATUS("cuda", cudaGetDeviceCount(&count)));
  if (count == 0) return absl::UnavailableError("cuda: no CUDA device is visible");
  return count;
}

absl::StatusOr<std::unique_ptr<CudaDevice>> MakeCudaDevice(int ordinal, int64_t bytes,
                                                           double fraction) {
  const std::string name = absl::StrCat("cuda", ordinal);
  ScopedDevice current(ordinal, name);
  RETURN_IF_ERROR(current.status());
  size_t free = 0, total = 0;
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(name, cudaMemGetInfo(&free, &total)));
  cudaDeviceProp properties{};
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(name, cudaGetDeviceProperties(&properties, ordinal)));
  const int64_t usable = std::max<int64_t>(0, static_cast<int64_t>(free) - kCudaHeadroomBytes);
  int64_t budget = bytes > 0 ? bytes : static_cast<int64_t>(fraction * static_cast<double>(free));
  if (budget > usable) {
    spdlog::warn(
        "{}: --device-memory {} bytes is more than the GPU has free ({} less {} "
        "headroom); using {}",
        name, budget, free, kCudaHeadroomBytes, usable);
    budget = usable;
  }
  spdlog::info("{}: {} (sm_{}{}), {} MiB free of {} MiB, budget {} MiB", name, properties.name,
               properties.major, properties.minor, free >> 20, total >> 20, budget >> 20);
  return std::make_unique<CudaDevice>(name, ordinal, budget);
}

}  // namespace pricer
