// CUDA allocations: device arrays are AccountedArrays (counted in the
// device's MemoryAccount, the engine's budget) whose memory comes from
// cudaMalloc; pinned host staging buffers are owned but not counted.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
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

// Page-locked host memory, which asynchronous copies need; outside any
// budget (host memory, bounded by the shard width).
template <typename T>
class PinnedArray {
 public:
  static absl::Status Allocate(int64_t size, absl::string_view what, absl::string_view device,
                               PinnedArray* out) {
    const int64_t bytes = std::max<int64_t>(size, 1) * static_cast<int64_t>(sizeof(T));
    void* data = nullptr;
    RETURN_IF_ERROR(
        CudaStatus(cudaHostAlloc(&data, static_cast<size_t>(bytes), cudaHostAllocDefault),
                   "cudaHostAlloc", absl::StrCat(device, " (", what, ", ", bytes, " bytes)")));
    out->data_.reset(static_cast<T*>(data));
    return absl::OkStatus();
  }

  T* data() { return data_.get(); }

 private:
  struct Free {
    void operator()(T* data) const { cudaFreeHost(data); }
  };
  std::unique_ptr<T, Free> data_;
};

}  // namespace pricer
