// Owned CUDA allocations: device arrays counted in the device's
// MemoryAccount (the engine's budget), and pinned host staging buffers.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/cuda/cuda_status.h"
#include "server/engine/memory_account.h"

namespace pricer {

enum class CudaMemory {
  kDevice,      // cudaMalloc, counted against the device's budget
  kPinnedHost,  // cudaHostAlloc: page-locked host memory for async copies
};

template <typename T, CudaMemory kMemory>
class CudaArray {
 public:
  CudaArray() = default;
  CudaArray(const CudaArray&) = delete;
  CudaArray& operator=(const CudaArray&) = delete;
  CudaArray(CudaArray&& other) noexcept { *this = std::move(other); }
  CudaArray& operator=(CudaArray&& other) noexcept {
    Reset();
    account_ = std::exchange(other.account_, nullptr);
    size_ = std::exchange(other.size_, 0);
    data_ = std::exchange(other.data_, nullptr);
    return *this;
  }
  ~CudaArray() { Reset(); }

  // `size` elements (uninitialised) on the current device, or pinned on the
  // host. Device bytes are reserved in `account` first, so a budget that is
  // full gives RESOURCE_EXHAUSTED naming `what` before CUDA is asked.
  static absl::Status Allocate(MemoryAccount* account, int64_t size, absl::string_view what,
                               absl::string_view device, CudaArray* out) {
    out->Reset();
    const int64_t bytes = std::max<int64_t>(size, 1) * static_cast<int64_t>(sizeof(T));
    if (kMemory == CudaMemory::kDevice) {
      if (absl::Status s = account->Reserve(bytes, what); !s.ok()) return s;
    }
    void* data = nullptr;
    const cudaError_t error =
        kMemory == CudaMemory::kDevice
            ? cudaMalloc(&data, static_cast<size_t>(bytes))
            : cudaHostAlloc(&data, static_cast<size_t>(bytes), cudaHostAllocDefault);
    if (error != cudaSuccess) {
      if (kMemory == CudaMemory::kDevice) account->Release(bytes);
      return CudaStatus(error, kMemory == CudaMemory::kDevice ? "cudaMalloc" : "cudaHostAlloc",
                        absl::StrCat(device, " (", what, ", ", bytes, " bytes)"));
    }
    out->account_ = kMemory == CudaMemory::kDevice ? account : nullptr;
    out->size_ = size;
    out->data_ = static_cast<T*>(data);
    return absl::OkStatus();
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  void Reset() {
    if (data_ == nullptr) return;
    // Errors here are sticky context errors already reported by the call
    // that caused them.
    if (kMemory == CudaMemory::kDevice) {
      cudaFree(data_);
      account_->Release(std::max<int64_t>(size_, 1) * static_cast<int64_t>(sizeof(T)));
    } else {
      cudaFreeHost(data_);
    }
    account_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }

  MemoryAccount* account_ = nullptr;
  int64_t size_ = 0;
  T* data_ = nullptr;
};

template <typename T>
using DeviceArray = CudaArray<T, CudaMemory::kDevice>;
template <typename T>
using PinnedArray = CudaArray<T, CudaMemory::kPinnedHost>;

}  // namespace pricer
