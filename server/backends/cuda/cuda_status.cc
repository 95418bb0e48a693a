#include "server/backends/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"
#include "server/scheduler/device.h"

namespace pricer {
namespace {

absl::string_view FunctionName(absl::string_view call) { return call.substr(0, call.find('(')); }

}  // namespace

absl::Status CudaStatus(cudaError_t error, absl::string_view call, absl::string_view device) {
  if (error == cudaSuccess) return absl::OkStatus();
  // The runtime also keeps the error as this thread's "last error", which
  // the next launch check (cudaGetLastError, and CUB's) would report again:
  // it is handled here, so clear it. A sticky error survives the clear.
  (void)cudaGetLastError();
  const std::string message =
      absl::StrCat(device, ": ", FunctionName(call), " failed: ", cudaGetErrorString(error), " (",
                   cudaGetErrorName(error), ")");
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return DeviceLost(absl::UnavailableError(message));
    // Faults that leave the CUDA context unusable for the rest of the
    // process (the runtime's "sticky" errors): every later call on this GPU
    // fails the same way.
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorLaunchTimeout:
      return DeviceLost(absl::InternalError(message));
    default:
      return absl::InternalError(message);
  }
}

absl::Status CublasStatus(cublasStatus_t status, absl::string_view call, absl::string_view device) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return CublasStatusGivenRuntime(status, cudaGetLastError(), call, device);
}

absl::Status CublasStatusGivenRuntime(cublasStatus_t status, cudaError_t runtime,
                                      absl::string_view call, absl::string_view device) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string message =
      absl::StrCat(device, ": ", FunctionName(call), " failed: ", cublasGetStatusString(status),
                   " (", cublasGetStatusName(status), ")");
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  if (runtime != cudaSuccess) {
    const absl::Status cause = CudaStatus(runtime, call, device);
    if (IsDeviceLost(cause)) {
      return DeviceLost(absl::Status(
          cause.code(), absl::StrCat(message, "; the CUDA runtime: ", cudaGetErrorString(runtime),
                                     " (", cudaGetErrorName(runtime), ")")));
    }
  }
  if (status == CUBLAS_STATUS_NOT_INITIALIZED) return DeviceLost(absl::UnavailableError(message));
  return absl::InternalError(message);
}

}  // namespace pricer
