#include "server/service/device_flags.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/cpu/cpu_device.h"
#include "spdlog/spdlog.h"

namespace pricer {

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
        absl::StrCat("'", text, "': a fraction of free memory must be in (0, 1]"));
  }
  return DeviceMemory{0, fraction};
}

absl::StatusOr<std::vector<std::unique_ptr<Device>>> MakeDevices(absl::string_view devices,
                                                                 const DeviceMemory& memory) {
  int64_t count = 0;
  if (devices == "auto" || devices == "cpu") {
    count = 1;
  } else if (!absl::StartsWith(devices, "cpu:") || !absl::SimpleAtoi(devices.substr(4), &count) ||
             count < 1 || count > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--devices '", devices, "' is not one of: auto, cpu, cpu:K (K from 1 to 64)"));
  }
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

}  // namespace pricer
