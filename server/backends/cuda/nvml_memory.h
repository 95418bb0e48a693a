// A GPU's free memory as the driver sees it, before this process has a CUDA
// context on it: NVML (nvmlDeviceGetMemoryInfo) needs no context, where
// cudaMemGetInfo creates one first. NVML is the driver's libnvidia-ml.so.1,
// loaded at run time, so the build needs no NVML headers and a packed
// binary takes the GPU machine's own (scripts/gpu-check.sh packs none).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace pricer {

// The free bytes of the GPU at PCI bus id `pci_bus_id` ("0000:65:00.0",
// cudaDeviceGetPCIBusId), or UNAVAILABLE saying why NVML could not tell
// (no libnvidia-ml, or an NVML error).
absl::StatusOr<int64_t> NvmlFreeBytes(const std::string& pci_bus_id);

}  // namespace pricer
