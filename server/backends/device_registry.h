// What `--devices` and `--device-memory` mean: the devices a server prices on
// and their memory budgets.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/scheduler/device.h"
#include "server/scheduler/memory_account.h"

namespace pricer {

// A byte count such as "1048576", "512MiB", "64MB" or "2GiB".
absl::StatusOr<int64_t> ParseBytes(absl::string_view text);

// A memory budget per device: absolute bytes, or a fraction of what the
// device reports free at start.
struct DeviceMemory {
  int64_t bytes = 0;      // > 0: this many bytes per device
  double fraction = 0.5;  // used when bytes == 0
};

// "8GiB" or "1073741824" (bytes), "0.5" or "50%" (a fraction in (0, 1]).
absl::StatusOr<DeviceMemory> ParseDeviceMemory(absl::string_view text);

// The bound on the page-locked host memory the cuda devices stage through
// (--pinned-memory): `pinned.bytes`, or `pinned.fraction` of the host's
// physical memory; either capped at the physical memory.
inline constexpr double kDefaultPinnedFraction = 0.125;
int64_t PinnedMemoryBytes(const DeviceMemory& pinned);

// The devices named by `devices`:
//   cpu       one cpu device with all the cores
//   cpu:K     K logical cpu devices (1 <= K <= 64), each with its own budget,
//             worker threads and cores / K threads for its GEMMs
//   cuda      a cuda device per visible GPU (builds with the CUDA backend)
//   cuda:I,J  the GPUs with those ordinals
//   auto      the GPUs when the build has the CUDA backend and a GPU is
//             usable, else cpu (a host without a GPU or driver says why in
//             the log)
// The cpu devices share the host memory: a fraction gives each device that
// fraction of MemAvailable / K; an absolute budget is capped at
// MemAvailable / K, so the budgets never exceed what the host has. A GPU's
// budget is capped by its free memory at start (MakeCudaDevice). The cuda
// devices stage through `pinned_memory`, the host's pinned memory account
// (the engine's EngineOptions::pinned_memory).
absl::StatusOr<std::vector<std::unique_ptr<Device>>> MakeDevices(
    absl::string_view devices, const DeviceMemory& memory,
    const std::shared_ptr<MemoryAccount>& pinned_memory);

}  // namespace pricer
