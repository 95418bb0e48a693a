#include "tests/scheduler/fake_device.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/backends/cpu/column_reducer.h"
#include "server/scheduler/memory_account.h"
#include "tests/time_scale.h"

namespace pricer {
namespace {

// seed * 2^19 + column * 16 + path: below 2^24 within the fake's bounds.
double FakeBase(uint64_t seed, int64_t column, int64_t p) {
  return static_cast<double>(seed) * 524288.0 + static_cast<double>(column) * 16.0 +
         static_cast<double>(p);
}

class FakeDeviceJob : public DeviceJob {
 public:
  FakeDeviceJob(const JobSpec& spec, FakeDevice& device, int64_t shard_columns)
      : spec_(spec), device_(device), shard_columns_(shard_columns) {}

  // ST, allocated as the contract says and filled with its closed form.
  absl::Status Start() {
    const int64_t paths = spec_.paths;
    const int64_t issuers = spec_.market.issuers();
    RETURN_IF_ERROR(AccountedArray<float>::Allocate(
        device_.memory(), device_.Allocations(spec_, shard_columns_).resident[0], &st_));
    for (int64_t i = 0; i < issuers; ++i) {
      for (int64_t p = 0; p < paths; ++p)
        st_.data()[i * paths + p] = FakeTerminalPrice(spec_.seed, p, i);
    }
    return absl::OkStatus();
  }

  absl::Status RunShard(const Shard& shard, ShardOutput* out) override {
    const int64_t paths = spec_.paths;
    // The A and SC blocks of the plan's width, held while the shard runs.
    const AllocationTable table = device_.Allocations(spec_, shard_columns_);
    AccountedArray<float> buffers, staging;
    RETURN_IF_ERROR(
        AccountedArray<float>::Allocate(device_.memory(), table.per_shard[0], &buffers));
    if (MemoryAccount* pinned = device_.pinned_memory()) {
      RETURN_IF_ERROR(
          AccountedArray<float>::Allocate(*pinned, table.pinned_per_shard[0], &staging));
    }
    FakeDeviceControl& control = device_.control();
    if (absl::Status fault = control.EnterShard(device_.name(), spec_, shard.index); !fault.ok()) {
      control.LeaveShard(device_.name());
      return fault;
    }
    float* sc = buffers.data() + spec_.market.issuers() * shard_columns_;
    for (int64_t j = shard.gemm_begin; j < shard.gemm_end; ++j) {
      for (int64_t p = 0; p < paths; ++p) {
        sc[(j - shard.gemm_begin) * paths + p] = FakeScenarioValue(spec_.seed, p, j);
      }
    }
    const int64_t kept = shard.out_end - shard.out_begin;
    const StatisticsSelection& selection = spec_.output.statistics;
    const float* first = sc + (shard.out_begin - shard.gemm_begin) * paths;
    if (spec_.output.full) out->values.assign(first, first + kept * paths);
    if (selection.any()) {
      out->statistics.Resize(selection, kept);
      ColumnReducer reducer(selection, paths, std::exp(-spec_.market.rate * spec_.market.maturity));
      for (int64_t k = 0; k < kept; ++k) {
        reducer.Reduce(first + k * paths, FakeV0(spec_.seed, shard.out_begin + k), k,
                       &out->statistics);
      }
    }
    control.LeaveShard(device_.name());
    return absl::OkStatus();
  }

  absl::Status CopyPathColumns(const PathColumns& columns, float* out) override {
    if (columns.values) return absl::UnimplementedError("the fake device prices no books");
    const int64_t paths = spec_.paths;
    std::copy(st_.data() + columns.begin * paths, st_.data() + columns.end * paths, out);
    return absl::OkStatus();
  }

 private:
  const JobSpec& spec_;
  FakeDevice& device_;
  const int64_t shard_columns_;
  AccountedArray<float> st_;
};

}  // namespace

float FakeScenarioValue(uint64_t seed, int64_t p, int64_t j) {
  return static_cast<float>(FakeBase(seed, j, p));
}

float FakeTerminalPrice(uint64_t seed, int64_t p, int64_t i) {
  return static_cast<float>(-1.0 - FakeBase(seed, i, p));
}

double FakeV0(uint64_t seed, int64_t j) { return 1000.0 * static_cast<double>(seed) + 0.25 * j; }

void FakeDeviceControl::Hold() {
  std::lock_guard lock(mu_);
  open_ = false;
  permits_ = 0;
  // Zeroed, not erased: shards waiting at the gate hold references to them.
  for (auto& [device, permits] : device_permits_) permits = 0;
}

void FakeDeviceControl::Allow(int64_t shards, const std::string& device) {
  {
    std::lock_guard lock(mu_);
    (device.empty() ? permits_ : device_permits_[device]) += shards;
  }
  changed_.notify_all();
}

void FakeDeviceControl::Open() {
  {
    std::lock_guard lock(mu_);
    open_ = true;
  }
  changed_.notify_all();
}

bool FakeDeviceControl::AwaitArrivals(int64_t count) {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, Scaled(kGateTimeout), [&] { return arrivals_ >= count; });
}

void FakeDeviceControl::FailShard(uint64_t seed, int64_t shard, absl::Status fault, int times) {
  std::lock_guard lock(mu_);
  for (int k = 0; k < times; ++k) faults_[{seed, shard}].push_back(fault);
}

std::vector<FakeShardRun> FakeDeviceControl::runs() const {
  std::lock_guard lock(mu_);
  return runs_;
}

std::vector<FakeJobStart> FakeDeviceControl::starts() const {
  std::lock_guard lock(mu_);
  return starts_;
}

int64_t FakeDeviceControl::max_running(const std::string& device) const {
  std::lock_guard lock(mu_);
  auto it = running_.find(device);
  return it == running_.end() ? 0 : it->second.most;
}

int64_t FakeDeviceControl::gate_timeouts() const {
  std::lock_guard lock(mu_);
  return gate_timeouts_;
}

void FakeDeviceControl::RecordStart(const std::string& device, uint64_t seed,
                                    int64_t bytes_in_use) {
  std::lock_guard lock(mu_);
  starts_.push_back(FakeJobStart{device, seed, bytes_in_use});
}

absl::Status FakeDeviceControl::EnterShard(const std::string& device, const JobSpec& spec,
                                           int64_t shard) {
  std::unique_lock lock(mu_);
  Running& running = running_[device];
  running.most = std::max(running.most, ++running.now);
  const size_t run = runs_.size();
  runs_.push_back(FakeShardRun{device, spec.client, spec.seed, shard, false});
  ++arrivals_;
  changed_.notify_all();
  int64_t& mine = device_permits_[device];
  if (!changed_.wait_for(lock, Scaled(kGateTimeout),
                         [&] { return open_ || mine > 0 || permits_ > 0; })) {
    ++gate_timeouts_;
  } else if (!open_) {
    --(mine > 0 ? mine : permits_);
  }
  auto it = faults_.find({spec.seed, shard});
  if (it == faults_.end() || it->second.empty()) return absl::OkStatus();
  absl::Status fault = std::move(it->second.front());
  it->second.pop_front();
  runs_[run].failed = true;
  return fault;
}

void FakeDeviceControl::LeaveShard(const std::string& device) {
  std::lock_guard lock(mu_);
  --running_[device].now;
}

FakeDevice::FakeDevice(std::string name, int64_t budget_bytes,
                       std::shared_ptr<FakeDeviceControl> control, int64_t max_shards_in_flight,
                       std::shared_ptr<MemoryAccount> pinned_memory)
    : Device(std::move(name), budget_bytes),
      control_(std::move(control)),
      max_shards_in_flight_(max_shards_in_flight),
      pinned_memory_(std::move(pinned_memory)) {}

AllocationTable FakeDevice::Allocations(const JobSpec& spec, int64_t shard_columns) const {
  AllocationTable table{
      {BufferOf<float>("fake terminal prices", spec.paths * spec.market.issuers())},
      {BufferOf<float>("fake shard buffers",
                       (spec.market.issuers() + spec.paths) * shard_columns)}};
  if (pinned_memory_ != nullptr) {
    table.pinned_per_shard.push_back(
        BufferOf<float>("fake pinned staging", spec.paths * shard_columns));
  }
  return table;
}

absl::StatusOr<std::unique_ptr<DeviceJob>> FakeDevice::StartJob(const JobSpec& spec,
                                                                int64_t shard_columns) {
  if (spec.seed >= kFakeSeeds || spec.paths > kFakeMaxPaths ||
      spec.market.issuers() > kFakeMaxColumns || spec.scenarios.columns() > kFakeMaxColumns) {
    return absl::InvalidArgumentError(
        absl::StrCat("the fake device's closed forms are exact for seed < ", kFakeSeeds,
                     ", P <= ", kFakeMaxPaths, ", N and M <= ", kFakeMaxColumns));
  }
  control_->RecordStart(name(), spec.seed, memory().in_use());
  auto job = std::make_unique<FakeDeviceJob>(spec, *this, shard_columns);
  RETURN_IF_ERROR(job->Start());
  return job;
}

}  // namespace pricer
