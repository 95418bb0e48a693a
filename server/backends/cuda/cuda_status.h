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
// rest, unless the CUDA runtime holds an error that CudaStatus marks lost (a
// fault that broke the context, which cuBLAS reports as an execution or
// internal error): then that, the runtime's error named after cuBLAS's.
// Reads the runtime's error with cudaGetLastError.
absl::Status CublasStatus(cublasStatus_t status, absl::string_view call, absl::string_view device);
// What CublasStatus returns when the runtime's error is `runtime`.
absl::Status CublasStatusGivenRuntime(cublasStatus_t status, cudaError_t runtime,
                                      absl::string_view call, absl::string_view device);

}  // namespace pricer

// The status of a CUDA runtime (or cuBLAS) call, naming the call: the CUDA
// half of the project's one error idiom (common/status_macros.h), e.g.
//
//   RETURN_IF_ERROR(PRICER_CUDA_STATUS(name_, cudaStreamSynchronize(stream)));
#define PRICER_CUDA_STATUS(device, call) ::pricer::CudaStatus((call), #call, (device))
#define PRICER_CUBLAS_STATUS(device, call) ::pricer::CublasStatus((call), #call, (device))
