#include "server/backends/cuda/cuda_handles.h"

#include <map>

#include "common/status_macros.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/backends/cuda/scoped_device.h"

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

namespace {

// The calling thread's handles, by GPU ordinal, destroyed when it ends.
class ThreadHandles {
 public:
  ~ThreadHandles() {
    for (auto& [ordinal, handle] : handles_) {
      ScopedDevice current(ordinal, "cuBLAS handle of a thread");
      cublasDestroy(handle);  // errors were reported where they arose
    }
  }
  cublasHandle_t& of(int ordinal) { return handles_[ordinal]; }
  void forget(int ordinal) { handles_.erase(ordinal); }

 private:
  std::map<int, cublasHandle_t> handles_;
};

thread_local ThreadHandles thread_handles;

}  // namespace

absl::StatusOr<cublasHandle_t> ThreadCublas(int ordinal, const std::string& device,
                                            cudaStream_t stream, DeviceArray<char>& workspace) {
  cublasHandle_t& handle = thread_handles.of(ordinal);
  if (handle == nullptr) {
    if (absl::Status made = PRICER_CUBLAS_STATUS(device, cublasCreate(&handle)); !made.ok()) {
      thread_handles.forget(ordinal);
      return made;
    }
  }
  RETURN_IF_ERROR(PRICER_CUBLAS_STATUS(device, cublasSetStream(handle, stream)));
  // After cublasSetStream, which resets the workspace to cuBLAS's own pool.
  RETURN_IF_ERROR(PRICER_CUBLAS_STATUS(
      device, cublasSetWorkspace(handle, workspace.data(), static_cast<size_t>(workspace.size()))));
  return handle;
}

absl::Status CountCublas(const std::string& device, MemoryAccount& account,
                         const CudaJobBuffers::Cublas& buffers, CublasUse* out) {
  RETURN_IF_ERROR(Reservation::Reserve(account, buffers.state, &out->state));
  return AllocateOnDevice(account, buffers.workspace, device, &out->workspace);
}

}  // namespace pricer
