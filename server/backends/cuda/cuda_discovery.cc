// Finding the GPUs, measuring what the process holds on each outside the
// budget, and sizing their budgets (declared in cuda_device.h).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/backends/cuda/cuda_device.h"
#include "server/backends/cuda/cuda_handles.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/backends/cuda/kernels.h"
#include "server/backends/cuda/nvml_memory.h"
#include "server/backends/cuda/scoped_device.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

// The probe's GEMM and kernel work on kProbeSize x kProbeSize floats.
constexpr int kProbeSize = 64;

absl::StatusOr<int64_t> FreeBytes(const std::string& name) {
  size_t free = 0, total = 0;
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(name, cudaMemGetInfo(&free, &total)));
  return static_cast<int64_t>(free);
}

// A cuBLAS handle on `stream` with `workspace` that has run one small GEMM
// over `matrices` (three kProbeSize^2 blocks).
absl::Status RunCublas(const std::string& name, cudaStream_t stream, char* workspace,
                       int64_t workspace_bytes, float* matrices, Cublas* out) {
  cublasHandle_t handle = nullptr;
  RETURN_IF_ERROR(PRICER_CUBLAS_STATUS(name, cublasCreate(&handle)));
  out->reset(handle);
  RETURN_IF_ERROR(PRICER_CUBLAS_STATUS(name, cublasSetStream(handle, stream)));
  RETURN_IF_ERROR(PRICER_CUBLAS_STATUS(
      name, cublasSetWorkspace(handle, workspace, static_cast<size_t>(workspace_bytes))));
  const float one = 1.0f, zero = 0.0f;
  const int n = kProbeSize;
  float* a = matrices;
  RETURN_IF_ERROR(
      PRICER_CUBLAS_STATUS(name, cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n,
                                             a + n * n, n, &zero, a + 2 * n * n, n)));
  return PRICER_CUDA_STATUS(name, cudaStreamSynchronize(stream));
}

// With the GPU current and its context made, and `free_before` the free
// bytes before that: the device bytes the process holds outside every
// job's table. A probe does what a job's first shard does: a cuBLAS handle
// with its workspace runs a GEMM, and one of our kernels runs (with lazy
// module loading, each loads its code on first use). A second handle then
// shows what each handle holds of its own, which jobs count (their
// table's "cuBLAS handle" entries); the rest, less the probe's own
// allocation, is the headroom.
absl::Status MeasureHeadroom(const std::string& name, int64_t free_before, GpuProfile* gpu) {
  Stream stream;
  RETURN_IF_ERROR(MakeStream(name, &stream));
  const int64_t workspace_bytes = gpu->cublas_workspace_bytes();
  // One allocation: the workspace, then the probe's matrices.
  const int64_t probe_bytes =
      workspace_bytes + int64_t{3} * kProbeSize * kProbeSize * static_cast<int64_t>(sizeof(float));
  MemoryAccount probe_account(probe_bytes);
  DeviceArray<char> probe;
  RETURN_IF_ERROR(DeviceArray<char>::Allocate(probe_account, probe_bytes, "headroom probe", &probe,
                                              CudaDeviceMemory{name}));
  char* workspace = probe.data();
  float* matrices = reinterpret_cast<float*>(probe.data() + workspace_bytes);
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(
      name, cudaMemsetAsync(matrices, 0, static_cast<size_t>(probe_bytes - workspace_bytes),
                            stream.get())));
  Cublas first, second;
  RETURN_IF_ERROR(RunCublas(name, stream.get(), workspace, workspace_bytes, matrices, &first));
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(
      name, cuda::LaunchShocks(1, false, kProbeSize, kProbeSize, matrices, stream.get())));
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(name, cudaStreamSynchronize(stream.get())));
  ASSIGN_OR_RETURN(const int64_t free_after_first, FreeBytes(name));
  RETURN_IF_ERROR(RunCublas(name, stream.get(), workspace, workspace_bytes, matrices, &second));
  ASSIGN_OR_RETURN(const int64_t free_after_second, FreeBytes(name));
  gpu->cublas_handle_bytes = std::max<int64_t>(0, free_after_first - free_after_second);
  gpu->context_headroom_bytes =
      std::max<int64_t>(0, free_before - free_after_first - probe_bytes - gpu->cublas_handle_bytes);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> CudaDeviceCount() {
  int count = 0;
  RETURN_IF_ERROR(PRICER_CUDA_STATUS("cuda", cudaGetDeviceCount(&count)));
  if (count == 0) return absl::UnavailableError("cuda: no CUDA device is visible");
  return count;
}

absl::StatusOr<std::unique_ptr<CudaDevice>> MakeCudaDevice(
    int ordinal, int64_t bytes, double fraction, std::shared_ptr<MemoryAccount> pinned_memory) {
  const std::string name = absl::StrCat("cuda", ordinal);
  // Neither call makes a context.
  cudaDeviceProp properties{};
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(name, cudaGetDeviceProperties(&properties, ordinal)));
  char bus_id[32] = {};
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(name, cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), ordinal)));
  GpuProfile gpu;
  gpu.compute_capability = properties.major * 10 + properties.minor;
  gpu.model = properties.name;
  const absl::StatusOr<int64_t> before_context = NvmlFreeBytes(bus_id);

  ScopedDevice current(ordinal, name);  // makes the context
  RETURN_IF_ERROR(current.status());
  RETURN_IF_ERROR(PRICER_CUDA_STATUS(name, cudaFree(nullptr)));
  ASSIGN_OR_RETURN(const int64_t after_context, FreeBytes(name));
  // The context's bytes by NVML's two readings, so that a constant
  // difference between NVML's and the runtime's idea of free memory (the
  // driver's reserve) cancels.
  const absl::StatusOr<int64_t> with_context = NvmlFreeBytes(bus_id);
  gpu.context_measured = before_context.ok() && with_context.ok();
  if (!gpu.context_measured) {
    const absl::Status why = before_context.ok() ? with_context.status() : before_context.status();
    spdlog::warn(
        "{}: free memory before the CUDA context is unknown ({}): the measured headroom "
        "leaves out the context itself",
        name, std::string(why.message()));
  }
  const int64_t context_bytes =
      gpu.context_measured ? std::max<int64_t>(0, *before_context - *with_context) : 0;
  // Free memory before the context, as the runtime counts it.
  const int64_t free = after_context + context_bytes;
  RETURN_IF_ERROR(MeasureHeadroom(name, free, &gpu));
  ReleaseFreedMemory();  // the probe's, pooled when it was freed

  const int64_t usable = std::max<int64_t>(0, free - gpu.context_headroom_bytes);
  int64_t budget = bytes > 0 ? bytes : static_cast<int64_t>(fraction * static_cast<double>(free));
  if (budget > usable) {
    spdlog::warn(
        "{}: --device-memory {} bytes is more than the GPU has free ({} less {} "
        "headroom); using {}",
        name, budget, free, gpu.context_headroom_bytes, usable);
    budget = usable;
  }
  spdlog::info(
      "{}: {} (sm_{}{}), {} MiB free of {} MiB before the process's context; measured headroom "
      "(context and loaded modules) {} MiB, {} KiB per cuBLAS handle, {} MiB cuBLAS workspace; "
      "budget {} MiB",
      name, properties.name, properties.major, properties.minor, free >> 20,
      properties.totalGlobalMem >> 20, gpu.context_headroom_bytes >> 20,
      gpu.cublas_handle_bytes >> 10, gpu.cublas_workspace_bytes() >> 20, budget >> 20);
  return std::make_unique<CudaDevice>(name, ordinal, budget, gpu, std::move(pinned_memory));
}

}  // namespace pricer
