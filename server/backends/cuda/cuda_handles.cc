#include "server/backends/cuda/cuda_handles.h"

#include "common/status_macros.h"
#include "server/backends/cuda/cuda_status.h"

namespace pricer {

absl::Status MakeStream(const std::string& device, Stream* out) {
  cudaStream_t stream = nullptr;
  RETURN_IF_ERROR(
      PRICER_CUDA_STATUS(device, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  out->reset(stream);
  return absl::OkStatus();
}

absl::Status MakeEvent(const std::string& device, bool timing, Event* out) {
  cudaEvent_t event = nullptr;
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(
      device,
      cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming)));
  out->reset(event);
  return absl::OkStatus();
}

absl::Status MakeCublas(const std::string& device, cudaStream_t stream, MemoryAccount& account,
                        const CudaJobBuffers::Cublas& buffers, CublasHandle* out) {
  RETURN_IF_ERROR(Reservation::Reserve(account, buffers.state, &out->state));
  cublasHandle_t handle = nullptr;
  RETURN_IF_ERROR(PRICER_CUBLAS_STATUS(device, cublasCreate(&handle)));
  out->handle.reset(handle);
  RETURN_IF_ERROR(PRICER_CUBLAS_STATUS(device, cublasSetStream(handle, stream)));
  // After cublasSetStream, which resets the workspace to cuBLAS's own pool.
  RETURN_IF_ERROR(AllocateOnDevice(account, buffers.workspace, device, &out->workspace));
  return PRICER_CUBLAS_STATUS(device,
                              cublasSetWorkspace(handle, out->workspace.data(),
                                                 static_cast<size_t>(out->workspace.size())));
}

}  // namespace pricer
