// Real cpu devices with injected faults, for the failure tests
// (multi_device_failure_test.cc, tests/reliability/device_faults_test.cc):
// before each shard a FlakyCpuDevice asks its ShardFault, which may fail the
// shard (an error), lose the device (DeviceLost) or hang (block); otherwise
// the shard runs on the real CpuDevice.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "server/backends/cpu/cpu_device.h"

namespace pricer::testing {

// What happens before a shard of `spec` runs on `device`: OK runs it.
using ShardFault =
    std::function<absl::Status(const JobSpec& spec, const Shard& shard, const std::string& device)>;

// Which shard attempts fail, shared by the devices of one server: the shards
// in `shards` of jobs priced with `seed`, on their first `times` attempts,
// whatever the device.
class InjectedFailures {
 public:
  // `lose_device`: each failure is a DeviceLost fault (a broken GPU) rather
  // than a failure of that shard only.
  InjectedFailures(uint64_t seed, std::set<int64_t> shards, int times, bool lose_device = false)
      : seed_(seed), shards_(std::move(shards)), times_(times), lose_device_(lose_device) {}

  // The fault of the devices that share `failures`.
  static ShardFault Fault(std::shared_ptr<InjectedFailures> failures);

  // (shard, device) of each injected failure, in order.
  std::vector<std::pair<int64_t, std::string>> failed() const;

 private:
  bool Fail(const JobSpec& spec, const Shard& shard, const std::string& device);

  const uint64_t seed_;
  const std::set<int64_t> shards_;
  const int times_;
  const bool lose_device_;
  mutable std::mutex mu_;
  std::map<int64_t, int> attempts_;
  std::vector<std::pair<int64_t, std::string>> failed_;
};

// A real cpu device (one thread) whose shards first meet `fault`.
class FlakyCpuDevice : public CpuDevice {
 public:
  FlakyCpuDevice(std::string name, int64_t budget_bytes, ShardFault fault)
      : CpuDevice(std::move(name), budget_bytes, 1), fault_(std::move(fault)) {}

  absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec,
                                                      int64_t shard_columns) override;

 private:
  const ShardFault fault_;
};

}  // namespace pricer::testing
