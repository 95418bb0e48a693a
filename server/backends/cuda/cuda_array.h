// Device arrays: AccountedArrays counted in the device's MemoryAccount (the
// engine's budget) whose memory comes from the GPU's stream-ordered memory
// pool. Pinned host blocks come from the GPU's BlockPool (server/scheduler/block_pool.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/scheduler/allocation_table.h"
#include "server/scheduler/memory_account.h"

namespace pricer {

// The AccountedArray memory policy of a GPU: the current device's default
// memory pool, stream-ordered (cudaMallocAsync, cudaFreeAsync), never
// managed memory. cudaMalloc and cudaFree synchronize the whole device, so a
// job's start and end would wait for every other job's kernels; these wait
// for nothing but the calling thread's per-thread stream, which nothing else
// uses. An allocation is complete before Allocate returns (any stream may
// use it); a Free comes after every stream that used the memory has been
// waited for (the callers' rule: a slot is dropped after its streams drain,
// a job's state after its stream). ReleaseFreedMemory gives what the pool
// keeps back to the GPU. `device` names it in errors.
struct CudaDeviceMemory {
  std::string device;

  absl::Status Allocate(int64_t bytes, absl::string_view what, void** out) const {
    const std::string where = absl::StrCat(device, " (", what, ", ", bytes, " bytes)");
    RETURN_IF_ERROR(
        CudaStatus(cudaMallocAsync(out, static_cast<size_t>(bytes), cudaStreamPerThread),
                   "cudaMallocAsync", where));
    absl::Status ready =
        CudaStatus(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize", where);
    if (!ready.ok()) Free(*out);
    return ready;
  }
  // Errors here are sticky context errors already reported by the call that
  // caused them.
  static void Free(void* data) { cudaFreeAsync(data, cudaStreamPerThread); }
};

// The memory freed into the current GPU's default pool, back to the GPU
// (what NVML and other processes see), once its frees have run. Called when
// a job's state is gone; not an error if it fails (the memory stays
// pooled for the next job).
inline void ReleaseFreedMemory() {
  int ordinal = 0;
  cudaMemPool_t pool = nullptr;
  if (cudaGetDevice(&ordinal) != cudaSuccess ||
      cudaDeviceGetDefaultMemPool(&pool, ordinal) != cudaSuccess ||
      cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess ||
      cudaMemPoolTrimTo(pool, 0) != cudaSuccess) {
    (void)cudaGetLastError();
  }
}

template <typename T>
using DeviceArray = AccountedArray<T, CudaDeviceMemory>;

// Allocates `buffer`, an entry of the job's AllocationTable, on the current
// GPU (named `device`), counted in `account`.
template <typename T>
absl::Status AllocateOnDevice(MemoryAccount& account, const Buffer& buffer,
                              const std::string& device, DeviceArray<T>* out) {
  return DeviceArray<T>::Allocate(account, buffer, out, CudaDeviceMemory{device});
}

// `host` into `buffer`, an entry of the job's AllocationTable, on the
// current GPU.
template <typename T>
absl::Status Upload(const std::string& device, MemoryAccount& account, const Buffer& buffer,
                    const std::vector<T>& host, cudaStream_t stream, DeviceArray<T>* out) {
  if (static_cast<int64_t>(host.size()) != buffer.elements) {
    return absl::InternalError(absl::StrCat(device, ": ", buffer.name, " has ", host.size(),
                                            " values, not ", buffer.elements));
  }
  RETURN_IF_ERROR(AllocateOnDevice(account, buffer, device, out));
  if (host.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(
      PRICER_CUDA_STATUS(device, cudaMemcpyAsync(out->data(), host.data(), host.size() * sizeof(T),
                                                 cudaMemcpyHostToDevice, stream)));
  // From pageable memory the call returns once `host` is staged, so it may go
  // away after this returns; no synchronisation is needed here.
  return absl::OkStatus();
}

}  // namespace pricer
