#include "server/scheduler/job.h"

#include <utility>

namespace pricer {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

double GemmFlops(const JobSpec& spec, int64_t columns) {
  return 2.0 * static_cast<double>(spec.paths) * static_cast<double>(spec.position_rows()) *
         static_cast<double>(columns);
}

Job::Job(std::string id, JobSpec spec, ShardPlan plan, std::vector<DevicePlan> device_plans,
         std::vector<int64_t> pinned_shard_bytes, int64_t max_pending_bytes,
         std::shared_ptr<PendingBytes> shared_pending, std::shared_ptr<WorkSignal> signal)
    : id_(std::move(id)),
      spec_(std::move(spec)),
      plan_(plan),
      device_plans_(std::move(device_plans)),
      pinned_shard_bytes_(std::move(pinned_shard_bytes)),
      tasks_(spec_.prepare != nullptr, PriceChunkCount(plan_, spec_), plan_.shard_count),
      signal_(std::move(signal)),
      start_(std::chrono::steady_clock::now()),
      results_(
          max_pending_bytes, [s = signal_] { s->Notify(); }, std::move(shared_pending)) {
  for (size_t d = 0; d < device_plans_.size(); ++d) {
    schedule_.on_device.push_back(std::make_unique<JobOnDevice>());
  }
  schedule_.served.assign(device_plans_.size(), 0);
  spec_.stopped = stopped_;
  if (spec_.prepare == nullptr) results_.MarkReady();
}

void Job::Cancel(absl::Status why) {
  Stop(std::move(why));
  signal_->Notify();
}

void Job::Stop(absl::Status why) {
  *stopped_ = true;
  CloseResults(std::move(why));
}

void Job::CloseResults(absl::Status status) {
  WorkSignal::Closing closing(*signal_);
  results_.Close(std::move(status));
}

double Job::flops() const {
  return plan_.shard_count > 0 ? GemmFlops(spec_, spec_.column_end - spec_.column_begin) : 0.0;
}

JobSummary Job::Summary() const {
  JobSummary summary;
  const double elapsed = elapsed_seconds_.load();
  summary.elapsed_seconds =
      elapsed >= 0 ? elapsed : Seconds(std::chrono::steady_clock::now() - start_);
  const double queued = queued_seconds_.load();
  summary.started = queued >= 0;
  summary.queued_seconds = summary.started ? queued : summary.elapsed_seconds;
  summary.flops = flops();
  summary.bytes = bytes_.load();
  summary.gemm_seconds = gemm_seconds_.load();
  summary.statistics_seconds = statistics_seconds_.load();
  return summary;
}

void Job::RecordStarted(std::chrono::steady_clock::time_point now) {
  if (queued_seconds_.load() < 0) queued_seconds_ = Seconds(now - start_);
}

void Job::RecordOutput(int64_t bytes, double gemm_seconds, double statistics_seconds) {
  bytes_ += bytes;
  gemm_seconds_ += gemm_seconds;
  statistics_seconds_ += statistics_seconds;
}

void Job::RecordRetired(std::chrono::steady_clock::time_point now) {
  elapsed_seconds_ = Seconds(now - start_);
}

}  // namespace pricer
