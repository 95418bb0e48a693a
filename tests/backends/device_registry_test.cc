// What pricerd's --devices and --device-memory accept and what they build: byte
// counts, fractions of free memory, and cpu devices whose budgets share the
// host's MemAvailable, which this test reads from /proc/meminfo itself.
#include "server/backends/device_registry.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backends/cpu/cpu_device.h"
#if defined(PRICER_HAVE_CUDA)
#include "server/backends/cuda/cuda_device.h"
#endif

namespace pricer {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kPiB = int64_t{1} << 50;
// MemAvailable moves while other processes run; budgets are compared with a
// reading taken here, not the one MakeDevices took.
constexpr double kMemoryDrift = 0.05;

// The line `key` of /proc/meminfo ("MemAvailable:"), bytes; fails the test
// when it is missing.
int64_t MemInfoBytes(const std::string& key) {
  std::ifstream meminfo("/proc/meminfo");
  std::string name;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> name >> kib >> unit) {
    if (name == key) {
      EXPECT_EQ(unit, "kB");
      return kib * 1024;
    }
  }
  ADD_FAILURE() << "/proc/meminfo has no " << key << " line";
  return 0;
}

int64_t MemAvailable() { return MemInfoBytes("MemAvailable:"); }

void ExpectBudgetNear(int64_t budget, double expected) {
  EXPECT_GE(static_cast<double>(budget), expected * (1 - kMemoryDrift));
  EXPECT_LE(static_cast<double>(budget), expected * (1 + kMemoryDrift));
}

// The host's pinned memory account, as pricerd makes it.
std::shared_ptr<MemoryAccount> Pinned() {
  return std::make_shared<MemoryAccount>(
      PinnedMemoryBytes(DeviceMemory{0, kDefaultPinnedFraction}));
}

std::vector<std::unique_ptr<Device>> Devices(absl::string_view devices,
                                             const DeviceMemory& memory) {
  absl::StatusOr<std::vector<std::unique_ptr<Device>>> made =
      MakeDevices(devices, memory, Pinned());
  EXPECT_TRUE(made.ok()) << made.status();
  if (!made.ok()) return {};
  return *std::move(made);
}

// The host's physical memory, bytes (what --pinned-memory's fraction is of).
int64_t PhysicalBytes() { return MemInfoBytes("MemTotal:"); }

TEST(PinnedMemoryBytesTest, AFractionOfPhysicalMemoryOrBytesCappedAtIt) {
  const double physical = static_cast<double>(PhysicalBytes());
  // An eighth by default; MemTotal and the page count differ by the kernel's own reserve.
  ExpectBudgetNear(PinnedMemoryBytes(DeviceMemory{0, kDefaultPinnedFraction}), physical / 8);
  ExpectBudgetNear(PinnedMemoryBytes(DeviceMemory{0, 0.5}), physical / 2);
  EXPECT_EQ(PinnedMemoryBytes(DeviceMemory{64 * kMiB, 0}), 64 * kMiB);
  ExpectBudgetNear(PinnedMemoryBytes(DeviceMemory{kPiB, 0}), physical);
}

TEST(ParseBytesTest, PlainCountsAndUnits) {
  EXPECT_EQ(ParseBytes("1048576").value(), 1048576);
  EXPECT_EQ(ParseBytes("512MiB").value(), 536870912);
  EXPECT_EQ(ParseBytes("64MB").value(), 64000000);
  EXPECT_EQ(ParseBytes("2GiB").value(), 2 * kGiB);
  EXPECT_EQ(ParseBytes(" 1kib ").value(), 1024);
  EXPECT_EQ(ParseBytes("3kb").value(), 3000);
  EXPECT_EQ(ParseBytes("1TiB").value(), int64_t{1} << 40);
  EXPECT_EQ(ParseBytes("100b").value(), 100);
  // A fraction of a unit is fine as long as it is at least a byte.
  EXPECT_EQ(ParseBytes("0.5GiB").value(), 536870912);
  EXPECT_EQ(ParseBytes("1.5KiB").value(), 1536);
}

TEST(ParseBytesTest, RefusesWhatIsNotAPositiveByteCountQuotingIt) {
  for (const char* text : {"", "abc", "-5", "0", "12XB", "MiB", "0.5", "0.5b", "9000000TiB"}) {
    absl::StatusOr<int64_t> bytes = ParseBytes(text);
    ASSERT_FALSE(bytes.ok()) << "'" << text << "' gave " << *bytes;
    EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(bytes.status().message(), HasSubstr(absl::StrCat("'", text, "'")));
    EXPECT_THAT(bytes.status().message(), HasSubstr("byte count"));
  }
}

TEST(ParseDeviceMemoryTest, FractionsOfFreeMemory) {
  for (const auto& [text, fraction] : {std::pair{"0.5", 0.5}, std::pair{"50%", 0.5},
                                       std::pair{"1", 1.0}, std::pair{" 25% ", 0.25}}) {
    absl::StatusOr<DeviceMemory> memory = ParseDeviceMemory(text);
    ASSERT_TRUE(memory.ok()) << text << ": " << memory.status();
    EXPECT_EQ(memory->bytes, 0) << text;
    EXPECT_DOUBLE_EQ(memory->fraction, fraction) << text;
  }
}

TEST(ParseDeviceMemoryTest, AbsoluteBytes) {
  for (const auto& [text, bytes] :
       {std::pair{"8GiB", 8 * kGiB}, std::pair{"1048576", int64_t{1048576}},
        std::pair{"64MiB", 64 * kMiB}, std::pair{"2", int64_t{2}}}) {
    absl::StatusOr<DeviceMemory> memory = ParseDeviceMemory(text);
    ASSERT_TRUE(memory.ok()) << text << ": " << memory.status();
    EXPECT_EQ(memory->bytes, bytes) << text;
  }
}

TEST(ParseDeviceMemoryTest, RefusesZeroNegativeOverAHundredPercentAndWords) {
  for (const char* text : {"0", "-0.5", "150%", "lots", "0%", "", "1.5"}) {
    absl::StatusOr<DeviceMemory> memory = ParseDeviceMemory(text);
    ASSERT_FALSE(memory.ok()) << "'" << text << "' gave bytes " << memory->bytes << " fraction "
                              << memory->fraction;
    EXPECT_EQ(memory.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(memory.status().message(), HasSubstr(absl::StrCat("'", text, "'")));
  }
}

TEST(MakeDevicesTest, CpuIsOneDeviceWithAllCores) {
  std::vector<std::unique_ptr<Device>> devices = Devices("cpu", DeviceMemory{kMiB, 0});
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]->name(), "cpu0");
  EXPECT_EQ(devices[0]->kind(), "cpu");
  EXPECT_EQ(devices[0]->memory().budget(), kMiB);
  EXPECT_EQ(devices[0]->memory().in_use(), 0);
  const auto* cpu = dynamic_cast<const CpuDevice*>(devices[0].get());
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->threads(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

bool HasUsableGpu() {
#if defined(PRICER_HAVE_CUDA)
  return CudaDeviceCount().ok();
#else
  return false;
#endif
}

TEST(MakeDevicesTest, AutoWithoutGpusIsCpu) {
  if (HasUsableGpu()) GTEST_SKIP() << "this host has a GPU: auto means cuda here";
  const int64_t available = MemAvailable();
  std::vector<std::unique_ptr<Device>> devices = Devices("auto", DeviceMemory{});
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]->name(), "cpu0");
  EXPECT_EQ(devices[0]->kind(), "cpu");
  // The default is half of what is free.
  ExpectBudgetNear(devices[0]->memory().budget(), 0.5 * static_cast<double>(available));
}

TEST(MakeDevicesTest, CpuKSplitsMemoryAndCoresEvenly) {
  const int64_t before = MemAvailable();
  std::vector<std::unique_ptr<Device>> devices = Devices("cpu:3", DeviceMemory{});
  const int64_t after = MemAvailable();
  ASSERT_EQ(devices.size(), 3u);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(devices[k]->name(), absl::StrCat("cpu", k));
    EXPECT_EQ(devices[k]->kind(), "cpu");
    EXPECT_EQ(devices[k]->memory().budget(), devices[0]->memory().budget());
    const auto* cpu = dynamic_cast<const CpuDevice*>(devices[k].get());
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->threads(), std::max(1, cores / 3));
  }
  const int64_t budget = devices[0]->memory().budget();
  EXPECT_LE(static_cast<double>(budget),
            static_cast<double>(std::max(before, after)) / 3 * (1 + kMemoryDrift));
  ExpectBudgetNear(budget, 0.5 * static_cast<double>(before + after) / 2 / 3);
}

TEST(MakeDevicesTest, AbsoluteBudgetIsExactWhenItFits) {
  std::vector<std::unique_ptr<Device>> devices = Devices("cpu:4", DeviceMemory{kMiB, 0});
  ASSERT_EQ(devices.size(), 4u);
  for (const auto& device : devices) EXPECT_EQ(device->memory().budget(), 1048576);
}

TEST(MakeDevicesTest, AbsoluteBudgetIsCappedAtTheHostsShare) {
  const int64_t available = MemAvailable();
  std::vector<std::unique_ptr<Device>> devices = Devices("cpu:2", DeviceMemory{kPiB, 0});
  ASSERT_EQ(devices.size(), 2u);
  for (const auto& device : devices) {
    EXPECT_LT(device->memory().budget(), kPiB);
    ExpectBudgetNear(device->memory().budget(), static_cast<double>(available) / 2);
  }
}

TEST(MakeDevicesTest, FractionIsOfEachDevicesShare) {
  const int64_t available = MemAvailable();
  std::vector<std::unique_ptr<Device>> devices = Devices("cpu:4", DeviceMemory{0, 0.25});
  ASSERT_EQ(devices.size(), 4u);
  for (const auto& device : devices) {
    ExpectBudgetNear(device->memory().budget(), 0.25 * static_cast<double>(available) / 4);
  }
}

TEST(MakeDevicesTest, SixtyFourIsTheMostDevices) {
  std::vector<std::unique_ptr<Device>> devices = Devices("cpu:64", DeviceMemory{kMiB, 0});
  ASSERT_EQ(devices.size(), 64u);
  EXPECT_EQ(devices.back()->name(), "cpu63");
}

TEST(MakeDevicesTest, CudaWithoutAUsableGpuSaysWhy) {
  if (HasUsableGpu()) GTEST_SKIP() << "this host has a GPU";
  for (const char* text : {"cuda", "cuda:0"}) {
    absl::StatusOr<std::vector<std::unique_ptr<Device>>> devices =
        MakeDevices(text, DeviceMemory{kMiB, 0}, Pinned());
    ASSERT_FALSE(devices.ok()) << text;
    EXPECT_THAT(devices.status().message(), HasSubstr(absl::StrCat("--devices '", text, "'")));
#if defined(PRICER_HAVE_CUDA)
    // The CUDA runtime's own reason: no driver, or no device.
    EXPECT_EQ(devices.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(devices.status().message(), HasSubstr("cudaGetDeviceCount failed"));
#else
    EXPECT_EQ(devices.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(devices.status().message(), HasSubstr("no CUDA backend"));
#endif
  }
}

TEST(MakeDevicesTest, CudaOrdinalsMustBeVisibleAndDistinct) {
  if (!HasUsableGpu()) GTEST_SKIP() << "needs a GPU";
  for (const char* text : {"cuda:99", "cuda:0,0", "cuda:x", "cuda:"}) {
    absl::StatusOr<std::vector<std::unique_ptr<Device>>> devices =
        MakeDevices(text, DeviceMemory{kMiB, 0}, Pinned());
    ASSERT_FALSE(devices.ok()) << text;
    EXPECT_EQ(devices.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(MakeDevicesTest, RefusesOtherFormsNamingTheTextAndTheAcceptedOnes) {
  for (const char* text : {"cpu:0", "cpu:65", "gpu", "cpu:x", "cpu:", "CPU", ""}) {
    absl::StatusOr<std::vector<std::unique_ptr<Device>>> devices =
        MakeDevices(text, DeviceMemory{kMiB, 0}, Pinned());
    ASSERT_FALSE(devices.ok()) << "'" << text << "' made " << devices->size() << " devices";
    EXPECT_EQ(devices.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(devices.status().message(), HasSubstr(absl::StrCat("'", text, "'")));
    EXPECT_THAT(devices.status().message(),
                HasSubstr("auto, cpu, cpu:K (K from 1 to 64), cuda or cuda:I,J,..."));
  }
}

}  // namespace
}  // namespace pricer
