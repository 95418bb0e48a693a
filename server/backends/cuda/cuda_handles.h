// Owned CUDA streams, events and cuBLAS handles, made on the current device
// (ScopedDevice) and checked like every other call (cuda_status.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "server/backends/cuda/cuda_array.h"
#include "server/scheduler/allocation_table.h"
#include "server/scheduler/memory_account.h"

namespace pricer {

struct StreamDeleter {
  void operator()(cudaStream_t stream) const { cudaStreamDestroy(stream); }
};
using Stream = std::unique_ptr<CUstream_st, StreamDeleter>;
struct EventDeleter {
  void operator()(cudaEvent_t event) const { cudaEventDestroy(event); }
};
using Event = std::unique_ptr<CUevent_st, EventDeleter>;
struct CublasDeleter {
  void operator()(cublasHandle_t handle) const { cublasDestroy(handle); }
};
using Cublas = std::unique_ptr<cublasContext, CublasDeleter>;

// A non-blocking stream: not ordered after the legacy default stream.
absl::Status MakeStream(const std::string& device, Stream* out);

// An event, with timing when `timing`.
absl::Status MakeEvent(const std::string& device, bool timing, Event* out);

// A cuBLAS handle on `stream` whose workspace is `workspace_buffer` (an
// entry of the job's AllocationTable), allocated into `workspace` and counted
// in `account`. Destroy the handle before its workspace.
absl::Status MakeCublas(const std::string& device, cudaStream_t stream, MemoryAccount& account,
                        const Buffer& workspace_buffer, Cublas* out, DeviceArray<char>* workspace);

}  // namespace pricer
