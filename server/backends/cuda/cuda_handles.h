// Owned CUDA streams, events and cuBLAS handles, made on the current device
// (ScopedDevice) and checked like every other call (cuda_status.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "server/backends/cuda/cuda_array.h"
#include "server/backends/cuda/cuda_device.h"
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

// A cuBLAS handle and the device bytes it holds, both counted: the
// workspace we allocate for it and its own state (measured at start,
// reserved). Members are destroyed in reverse: the handle before its
// workspace.
struct CublasHandle {
  Reservation state;
  DeviceArray<char> workspace;
  Cublas handle;

  cublasHandle_t get() const { return handle.get(); }
};

// A cuBLAS handle on `stream` for the entries `buffers` of the job's
// AllocationTable, counted in `account` (its state reserved before
// cublasCreate, so a handle that does not fit is refused before it exists).
absl::Status MakeCublas(const std::string& device, cudaStream_t stream, MemoryAccount& account,
                        const CudaJobBuffers::Cublas& buffers, CublasHandle* out);

}  // namespace pricer
