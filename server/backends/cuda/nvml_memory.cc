#include "server/backends/cuda/nvml_memory.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace pricer {
namespace {

// The few NVML declarations used here, as nvml.h states them (a stable C
// ABI: nvmlReturn_t is an enum whose success is 0).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlMemory {
  unsigned long long total;  // NOLINT(runtime/int): NVML's own types
  unsigned long long free;   // NOLINT(runtime/int)
  unsigned long long used;   // NOLINT(runtime/int)
};
constexpr NvmlReturn kNvmlSuccess = 0;

// The library's functions, looked up once; `error` says why when it is not there.
struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*device_by_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*memory_info)(NvmlDevice, NvmlMemory*) = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  std::string error;
};

template <typename F>
bool Find(void* library, const char* symbol, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, symbol));
  return *out != nullptr;
}

const Nvml& LoadNvml() {
  static const Nvml nvml = [] {
    Nvml n;
    // Kept loaded for the process's life: NVML is the driver's.
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      n.error = absl::StrCat("cannot load libnvidia-ml.so.1: ", dlerror());
      return n;
    }
    if (!Find(library, "nvmlInit_v2", &n.init) || !Find(library, "nvmlShutdown", &n.shutdown) ||
        !Find(library, "nvmlDeviceGetHandleByPciBusId_v2", &n.device_by_bus_id) ||
        !Find(library, "nvmlDeviceGetMemoryInfo", &n.memory_info) ||
        !Find(library, "nvmlErrorString", &n.error_string)) {
      n.init = nullptr;
      n.error = "libnvidia-ml.so.1 lacks an NVML function it should have";
    }
    return n;
  }();
  return nvml;
}

}  // namespace

absl::StatusOr<int64_t> NvmlFreeBytes(const std::string& pci_bus_id) {
  const Nvml& nvml = LoadNvml();
  if (nvml.init == nullptr) return absl::UnavailableError(nvml.error);
  auto failed = [&](const char* call, NvmlReturn r) {
    return absl::UnavailableError(absl::StrCat(call, " failed: ", nvml.error_string(r)));
  };
  if (const NvmlReturn r = nvml.init(); r != kNvmlSuccess) return failed("nvmlInit", r);
  NvmlDevice device = nullptr;
  NvmlMemory memory{};
  NvmlReturn r = nvml.device_by_bus_id(pci_bus_id.c_str(), &device);
  const char* call = "nvmlDeviceGetHandleByPciBusId";
  if (r == kNvmlSuccess) {
    r = nvml.memory_info(device, &memory);
    call = "nvmlDeviceGetMemoryInfo";
  }
  nvml.shutdown();
  if (r != kNvmlSuccess) return failed(call, r);
  return static_cast<int64_t>(memory.free);
}

}  // namespace pricer
