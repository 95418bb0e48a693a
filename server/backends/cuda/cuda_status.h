// CUDA runtime and cuBLAS results as absl::Status: the one place where a
// device error becomes a value. A failed call fails the shard or job that made
// it (the engine retries a shard once on another device), never the process.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pricer {

// OK for cudaSuccess. Otherwise the status names the device, the call and the
// error, e.g. "cuda0: cudaMalloc failed: out of memory
// (cudaErrorMemoryAllocation)". Codes: RESOURCE_EXHAUSTED for allocation
// failures, UNAVAILABLE when there is no usable device or driver, INTERNAL
// for the rest. `call` may be the whole call expression; only the function
// name is kept. A missing device or driver, and a fault that breaks the CUDA
// context (an illegal address, a failed launch, an uncorrectable ECC error),
// are also marked DeviceLost (server/scheduler/device.h): the engine stops
// giving work to that GPU.
absl::Status CudaStatus(cudaError_t error, absl::string_view call, absl::string_view device);

// The same for cuBLAS: RESOURCE_EXHAUSTED for CUBLAS_STATUS_ALLOC_FAILED,
// UNAVAILABLE (and lost) for CUBLAS_STATUS_NOT_INITIALIZED, INTERNAL for the
// rest.
absl::Status CublasStatus(cublasStatus_t status, absl::string_view call, absl::string_view device);

}  // namespace pricer

// Returns from the enclosing function (absl::Status or StatusOr) when `call`
// fails, e.g. PRICER_CUDA_RETURN_IF_ERROR(name(), cudaStreamSynchronize(s)).
#define PRICER_CUDA_RETURN_IF_ERROR(device, call)                                     \
  do {                                                                                \
    if (::absl::Status pricer_status = ::pricer::CudaStatus((call), #call, (device)); \
        !pricer_status.ok()) {                                                        \
      return pricer_status;                                                           \
    }                                                                                 \
  } while (false)

#define PRICER_CUBLAS_RETURN_IF_ERROR(device, call)                                     \
  do {                                                                                  \
    if (::absl::Status pricer_status = ::pricer::CublasStatus((call), #call, (device)); \
        !pricer_status.ok()) {                                                          \
      return pricer_status;                                                             \
    }                                                                                   \
  } while (false)
