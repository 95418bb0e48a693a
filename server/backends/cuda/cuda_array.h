// CUDA allocations, both AccountedArrays: device arrays (counted in the
// device's MemoryAccount, the engine's budget) whose memory comes from
// cudaMalloc, and pinned host staging buffers (counted in the host's pinned
// memory account, --pinned-memory) from cudaHostAlloc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/scheduler/allocation_table.h"
#include "server/scheduler/memory_account.h"

namespace pricer {

// The AccountedArray memory policy of a GPU: plain cudaMalloc on the current
// device, never managed memory. `device` names it in errors.
struct CudaDeviceMemory {
  std::string device;

  absl::Status Allocate(int64_t bytes, absl::string_view what, void** out) const {
    return CudaStatus(cudaMalloc(out, static_cast<size_t>(bytes)), "cudaMalloc",
                      absl::StrCat(device, " (", what, ", ", bytes, " bytes)"));
  }
  // Errors here are sticky context errors already reported by the call that
  // caused them.
  static void Free(void* data) { cudaFree(data); }
};

template <typename T>
using DeviceArray = AccountedArray<T, CudaDeviceMemory>;

// Allocates `buffer`, an entry of the job's AllocationTable, on the current
// GPU (named `device`), counted in `account`.
template <typename T>
absl::Status AllocateOnDevice(MemoryAccount& account, const Buffer& buffer,
                              const std::string& device, DeviceArray<T>* out) {
  return DeviceArray<T>::Allocate(account, buffer, out, CudaDeviceMemory{device});
}

// The AccountedArray memory policy of page-locked host memory, which
// asynchronous copies need. `device` names the GPU it stages for in errors.
struct CudaPinnedMemory {
  std::string device;

  absl::Status Allocate(int64_t bytes, absl::string_view what, void** out) const {
    return CudaStatus(cudaHostAlloc(out, static_cast<size_t>(bytes), cudaHostAllocDefault),
                      "cudaHostAlloc", absl::StrCat(device, " (", what, ", ", bytes, " bytes)"));
  }
  static void Free(void* data) { cudaFreeHost(data); }
};

template <typename T>
using PinnedArray = AccountedArray<T, CudaPinnedMemory>;

// Allocates `buffer`, a pinned entry of the job's AllocationTable, staging
// for GPU `device`, counted in the host's pinned memory `account`.
template <typename T>
absl::Status AllocatePinned(MemoryAccount& account, const Buffer& buffer, const std::string& device,
                            PinnedArray<T>* out) {
  return PinnedArray<T>::Allocate(account, buffer, out, CudaPinnedMemory{device});
}

}  // namespace pricer
