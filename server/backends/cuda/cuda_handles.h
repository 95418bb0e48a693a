// Owned CUDA streams, events and cuBLAS handles, made on the current device
// (ScopedDevice) and checked like every other call (cuda_status.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// The calling thread's cuBLAS handle on GPU `ordinal` (current, named
// `device` in errors), set to `stream` and `workspace`: one handle per thread
// and GPU, made on the thread's first call and destroyed when the thread
// ends (the engine's workers live as long as the server). cuBLAS recommends
// a handle per thread for the thread's life; a handle per job or slot would
// be destroyed at the job's end, and cublasDestroy synchronizes the whole
// GPU. The slot that calls it counts the handle's bytes (CublasUse).
absl::StatusOr<cublasHandle_t> ThreadCublas(int ordinal, const std::string& device,
                                            cudaStream_t stream, DeviceArray<char>& workspace);

// What a slot's (or ST's correlation) GEMMs count of cuBLAS on the device:
// the workspace we give the thread's handle and the handle's own state
// (measured at start, reserved).
struct CublasUse {
  Reservation state;
  DeviceArray<char> workspace;

  // The thread's handle on `stream` with this workspace (ThreadCublas).
  absl::StatusOr<cublasHandle_t> Bind(int ordinal, const std::string& device, cudaStream_t stream) {
    return ThreadCublas(ordinal, device, stream, workspace);
  }
};

// The entries `buffers` of the job's AllocationTable for cuBLAS, counted in
// `account`: the state reserved, the workspace allocated.
absl::Status CountCublas(const std::string& device, MemoryAccount& account,
                         const CudaJobBuffers::Cublas& buffers, CublasUse* out);

}  // namespace pricer
