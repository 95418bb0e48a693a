#include "server/backends/device_registry.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "server/backends/cpu/cpu_device.h"
#include "spdlog/spdlog.h"
#if defined(PRICER_HAVE_CUDA)
#include "server/backends/cuda/cuda_device.h"
#endif

namespace pricer {
namespace {

// Host memory available for new allocations now (MemAvailable), bytes.
int64_t HostAvailableBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return static_cast<int64_t>(sysconf(_SC_AVPHYS_PAGES)) *
         static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

int64_t HostPhysicalBytes() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
         static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

absl::StatusOr<int64_t> ParseBytes(absl::string_view text) {
  static constexpr std::pair<absl::string_view, int64_t> kUnits[] = {
      {"kib", 1LL << 10},   {"mib", 1LL << 20},      {"gib", 1LL << 30},
      {"tib", 1LL << 40},   {"kb", 1000LL},          {"mb", 1000000LL},
      {"gb", 1000000000LL}, {"tb", 1000000000000LL}, {"b", 1}};
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  absl::string_view number = lower;
  int64_t unit = 1;
  for (const auto& [suffix, scale] : kUnits) {
    if (number.size() > suffix.size() && absl::EndsWith(number, suffix)) {
      number.remove_suffix(suffix.size());
      unit = scale;
      break;
    }
  }
  double value = 0;
  const bool parsed = absl::SimpleAtod(absl::StripAsciiWhitespace(number), &value);
  // The unit may take a fraction ("0.5GiB"); the count must still be a byte or more.
  const double bytes = value * static_cast<double>(unit);
  if (!parsed || !(bytes >= 1) || bytes > 9.0e18) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a byte count such as 1048576, 512MiB or 2GB"));
  }
  return static_cast<int64_t>(bytes);
}

absl::StatusOr<DeviceMemory> ParseDeviceMemory(absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  double fraction = 0;
  if (absl::EndsWith(trimmed, "%") &&
      absl::SimpleAtod(trimmed.substr(0, trimmed.size() - 1), &fraction)) {
    fraction /= 100;
  } else if (!absl::SimpleAtod(trimmed, &fraction) || fraction > 1) {
    // A plain number above 1 is a byte count, so it must be whole ("1.5" is
    // neither a fraction nor bytes).
    const bool whole = fraction == std::floor(fraction);
    absl::StatusOr<int64_t> bytes = ParseBytes(trimmed);
    if (!bytes.ok() || !whole) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", text, "' is neither a byte count (8GiB, 1073741824) nor a fraction (0.5, 50%)"));
    }
    return DeviceMemory{*bytes, 0};
  }
  if (!(fraction > 0 && fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "': a fraction of memory must be in (0, 1]"));
  }
  return DeviceMemory{0, fraction};
}

int64_t PinnedMemoryBytes(const DeviceMemory& pinned) {
  const int64_t physical = HostPhysicalBytes();
  if (pinned.bytes == 0)
    return static_cast<int64_t>(pinned.fraction * static_cast<double>(physical));
  if (pinned.bytes > physical) {
    spdlog::warn("--pinned-memory {} bytes is more than the host's {} bytes; using {}",
                 pinned.bytes, physical, physical);
    return physical;
  }
  return pinned.bytes;
}

namespace {

constexpr absl::string_view kDeviceForms =
    "auto, cpu, cpu:K (K from 1 to 64), cuda or cuda:I,J,... (GPU ordinals)";

absl::StatusOr<std::vector<std::unique_ptr<Device>>> MakeCpuDevices(int64_t count,
                                                                    const DeviceMemory& memory) {
  const int64_t share = HostAvailableBytes() / count;
  int64_t budget = memory.bytes > 0 ? memory.bytes : static_cast<int64_t>(memory.fraction * share);
  if (budget > share) {
    spdlog::warn("--device-memory {} bytes is more than the host has per cpu device; using {}",
                 budget, share);
    budget = share;
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = std::max<int>(1, cores / static_cast<int>(count));
  std::vector<std::unique_ptr<Device>> out;
  for (int64_t k = 0; k < count; ++k) {
    out.push_back(std::make_unique<CpuDevice>(absl::StrCat("cpu", k), budget, threads));
  }
  return out;
}

// The GPUs of "cuda" (all) or "cuda:0,2" (those ordinals).
absl::StatusOr<std::vector<std::unique_ptr<Device>>> MakeGpuDevices(
    absl::string_view devices, const DeviceMemory& memory,
    const std::shared_ptr<MemoryAccount>& pinned_memory) {
#if defined(PRICER_HAVE_CUDA)
  absl::StatusOr<int> visible = CudaDeviceCount();
  if (!visible.ok()) {
    return absl::Status(visible.status().code(),
                        absl::StrCat("--devices '", devices, "': ", visible.status().message()));
  }
  std::vector<int> ordinals;
  if (devices == "cuda") {
    for (int k = 0; k < *visible; ++k) ordinals.push_back(k);
  } else {
    for (absl::string_view item : absl::StrSplit(devices.substr(5), ',')) {
      int ordinal = -1;
      if (!absl::SimpleAtoi(item, &ordinal) || ordinal < 0 || ordinal >= *visible) {
        return absl::InvalidArgumentError(absl::StrCat("--devices '", devices, "': '", item,
                                                       "' is not a GPU ordinal in [0, ", *visible,
                                                       ") (", *visible, " visible)"));
      }
      if (std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--devices '", devices, "': GPU ", ordinal, " is named twice"));
      }
      ordinals.push_back(ordinal);
    }
  }
  std::vector<std::unique_ptr<Device>> out;
  for (int ordinal : ordinals) {
    ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> device,
                     MakeCudaDevice(ordinal, memory.bytes, memory.fraction, pinned_memory));
    out.push_back(std::move(device));
  }
  return out;
#else
  (void)memory;
  (void)pinned_memory;
  return absl::InvalidArgumentError(
      absl::StrCat("--devices '", devices,
                   "': this build has no CUDA backend (configure with -DPRICER_CUDA=ON)"));
#endif
}

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<Device>>> MakeDevices(
    absl::string_view devices, const DeviceMemory& memory,
    const std::shared_ptr<MemoryAccount>& pinned_memory) {
  if (devices == "cpu") return MakeCpuDevices(1, memory);
  if (devices == "cuda" || absl::StartsWith(devices, "cuda:")) {
    return MakeGpuDevices(devices, memory, pinned_memory);
  }
  if (devices == "auto") {
#if defined(PRICER_HAVE_CUDA)
    absl::StatusOr<std::vector<std::unique_ptr<Device>>> gpus =
        MakeGpuDevices("cuda", memory, pinned_memory);
    if (gpus.ok()) return gpus;
    spdlog::info("--devices auto: no usable GPU ({}); pricing on the cpu",
                 std::string(gpus.status().message()));
#endif
    return MakeCpuDevices(1, memory);
  }
  int64_t count = 0;
  if (!absl::StartsWith(devices, "cpu:") || !absl::SimpleAtoi(devices.substr(4), &count) ||
      count < 1 || count > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--devices '", devices, "' is not one of: ", kDeviceForms));
  }
  return MakeCpuDevices(count, memory);
}

}  // namespace pricer
