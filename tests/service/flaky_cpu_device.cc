#include "tests/service/flaky_cpu_device.h"

namespace pricer::testing {
namespace {

// The DeviceJob of a FlakyCpuDevice: the real one behind the fault.
class FlakyJob : public DeviceJob {
 public:
  FlakyJob(std::unique_ptr<DeviceJob> job, const JobSpec& spec, std::string device,
           const ShardFault& fault)
      : job_(std::move(job)), spec_(spec), device_(std::move(device)), fault_(fault) {}

  absl::Status RunShard(const Shard& shard, ShardOutput* out) override {
    if (absl::Status fault = fault_(spec_, shard, device_); !fault.ok()) return fault;
    return job_->RunShard(shard, out);
  }
  absl::Status CopyPathColumns(const PathColumns& columns, float* out) override {
    return job_->CopyPathColumns(columns, out);
  }

 private:
  const std::unique_ptr<DeviceJob> job_;
  const JobSpec& spec_;  // outlives the DeviceJob (device.h)
  const std::string device_;
  const ShardFault& fault_;  // the device's, which outlives its jobs
};

}  // namespace

ShardFault InjectedFailures::Fault(std::shared_ptr<InjectedFailures> failures) {
  return [failures](const JobSpec& spec, const Shard& shard, const std::string& device) {
    if (!failures->Fail(spec, shard, device)) return absl::OkStatus();
    return failures->lose_device_ ? DeviceLost(absl::InternalError("injected fault"))
                                  : absl::InternalError("injected failure");
  };
}

std::vector<std::pair<int64_t, std::string>> InjectedFailures::failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

bool InjectedFailures::Fail(const JobSpec& spec, const Shard& shard, const std::string& device) {
  if (spec.seed != seed_ || !shards_.contains(shard.index)) return false;
  std::lock_guard lock(mu_);
  if (attempts_[shard.index]++ >= times_) return false;
  failed_.emplace_back(shard.index, device);
  return true;
}

absl::StatusOr<std::unique_ptr<DeviceJob>> FlakyCpuDevice::StartJob(const JobSpec& spec,
                                                                    int64_t shard_columns) {
  absl::StatusOr<std::unique_ptr<DeviceJob>> job = CpuDevice::StartJob(spec, shard_columns);
  if (!job.ok()) return job.status();
  return std::make_unique<FlakyJob>(*std::move(job), spec, name(), fault_);
}

}  // namespace pricer::testing
