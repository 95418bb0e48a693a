#include "server/backends/cuda/pinned_memory.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/backends/cuda/scoped_device.h"

namespace pricer {

BlockMemory CudaPinnedMemory(int ordinal, std::string device) {
  BlockMemory memory;
  memory.allocate = [device](int64_t bytes, absl::string_view what, void** out) {
    return CudaStatus(cudaHostAlloc(out, static_cast<size_t>(bytes), cudaHostAllocDefault),
                      "cudaHostAlloc", absl::StrCat(device, " (", what, ", ", bytes, " bytes)"));
  };
  memory.free = [ordinal, device = std::move(device)](void* data) {
    ScopedDevice current(ordinal, device);
    cudaFreeHost(data);  // an error here was reported where it arose
  };
  return memory;
}

}  // namespace pricer
