#include "server/scheduler/engine.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Engine::Engine(std::vector<std::unique_ptr<Device>> devices, EngineOptions options)
    : options_(options),
      devices_(std::move(devices)),
      signal_(std::make_shared<WorkSignal>()),
      mu_(signal_->mu),
      pending_(std::make_shared<PendingBytes>(options.max_pending_bytes)),
      pinned_(options.pinned_memory != nullptr ? options.pinned_memory
                                               : std::make_shared<MemoryAccount>(0)),
      queues_(devices_.size()) {
  for (size_t d = 0; d < devices_.size(); ++d) {
    for (int slot = 0; slot < std::max(1, options_.max_shards_in_flight); ++slot) {
      workers_.emplace_back([this, d] { WorkerLoop(d); });
    }
  }
}

Engine::~Engine() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (const auto& job : jobs_) job->Stop(absl::UnavailableError("the server is shutting down"));
  }
  signal_->cv.SignalAll();
  for (std::thread& worker : workers_) worker.join();
  absl::MutexLock lock(&mu_);
  for (const auto& job : std::vector<std::shared_ptr<Job>>(jobs_)) Tidy(job);
  DestroyReleased();
}

std::vector<PlannerDevice> Engine::PlannerDevices() const {
  std::vector<PlannerDevice> devices;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const int64_t budget = devices_[d]->memory().budget();
    int64_t job_budget = budget;
    if (options_.max_job_bytes > 0) job_budget = std::min(job_budget, options_.max_job_bytes);
    if (options_.max_job_fraction > 0) {
      job_budget = std::min(job_budget, static_cast<int64_t>(options_.max_job_fraction *
                                                             static_cast<double>(budget)));
    }
    devices.push_back(PlannerDevice{devices_[d].get(), queues_[d].lost, job_budget});
  }
  return devices;
}

int64_t Engine::TargetShardBytes(const JobSpec& spec) const {
  int64_t bytes = kTargetShardBytes;
  if (spec.output.full) return bytes;
  for (const auto& device : devices_) bytes = std::max(bytes, device->StatisticsShardBytes());
  return bytes;
}

absl::StatusOr<std::shared_ptr<Job>> Engine::Submit(JobSpec spec) {
  ShardPlan plan = PlanShards(spec, TargetShardBytes(spec));
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    // Under the lock: a device lost meanwhile is not planned on.
    ASSIGN_OR_RETURN(std::vector<DevicePlan> device_plans,
                     PlanDevices(spec, PlannerDevices(), options_.max_shards_in_flight, &plan));
    ASSIGN_OR_RETURN(std::vector<int64_t> pinned, FitPinned(spec, plan, &device_plans));
    const double flops =
        plan.shard_count > 0 ? GemmFlops(spec, spec.column_end - spec.column_begin) : 0.0;
    RETURN_IF_ERROR(CheckAdmission(spec.client, flops));
    job = std::make_shared<Job>(absl::StrCat("job-", next_job_id_++), std::move(spec), plan,
                                std::move(device_plans), std::move(pinned),
                                options_.max_pending_bytes_per_job, pending_, signal_);
    jobs_.push_back(job);
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (job->device_plans()[d].shards_in_flight > 0) queues_[d].Add(job);
    }
  }
  signal_->cv.SignalAll();
  return job;
}

absl::Status Engine::CheckFits(const JobSpec& spec) const {
  ShardPlan plan = PlanShards(spec, TargetShardBytes(spec));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::vector<DevicePlan> device_plans,
                   PlanDevices(spec, PlannerDevices(), options_.max_shards_in_flight, &plan));
  return FitPinned(spec, plan, &device_plans).status();
}

absl::StatusOr<std::vector<int64_t>> Engine::FitPinned(
    const JobSpec& spec, const ShardPlan& plan, std::vector<DevicePlan>* device_plans) const {
  std::vector<int64_t> pinned(devices_.size(), 0);
  std::string refusal;
  bool fits_somewhere = false;
  for (size_t d = 0; d < devices_.size(); ++d) {
    DevicePlan& device_plan = (*device_plans)[d];
    if (device_plan.shards_in_flight == 0) continue;
    pinned[d] = devices_[d]->Allocations(spec, plan.shard_columns).pinned_shard_bytes();
    if (pinned[d] <= pinned_->budget()) {
      fits_somewhere = true;
    } else {
      device_plan.shards_in_flight = 0;
      refusal = absl::StrCat("the job needs ", pinned[d], " bytes of pinned host memory on ",
                             devices_[d]->name(), " (staging one shard of ", plan.shard_columns,
                             " columns); the host's pinned memory is ", pinned_->budget(),
                             " bytes (--pinned-memory)");
    }
  }
  if (!fits_somewhere && !refusal.empty()) return absl::ResourceExhaustedError(refusal);
  return pinned;
}

absl::Status Engine::CheckAdmission(const std::string& client, double flops) const {
  // The client's quotas first, so that a client over its own quota is told
  // so, and never another client's queue.
  int64_t jobs = 0;
  double pending_flops = 0;
  for (const auto& job : jobs_) {
    if (job->spec().client != client) continue;
    ++jobs;
    pending_flops += job->flops();
  }
  if (options_.max_jobs_per_client > 0 && jobs >= options_.max_jobs_per_client) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "client ", client, " has ", jobs, " jobs queued or running, its quota (",
        "--max-jobs-per-client ", options_.max_jobs_per_client, "); retry when one finishes"));
  }
  if (options_.max_pending_flops_per_client > 0 &&
      pending_flops + flops > options_.max_pending_flops_per_client) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "client %s has %.4g flops queued or running and this job adds %.4g, over its quota of "
        "%.4g (--max-pending-flops-per-client)",
        client, pending_flops, flops, options_.max_pending_flops_per_client));
  }
  if (static_cast<int64_t>(jobs_.size()) >= options_.max_queued_jobs) {
    return absl::ResourceExhaustedError(
        absl::StrCat(jobs_.size(),
                     " jobs are queued or running, the server's limit "
                     "(--max-queued-jobs); retry later"));
  }
  return absl::OkStatus();
}

std::vector<std::string> Engine::StopAll(const absl::Status& why) {
  std::vector<std::string> stopped;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& job : jobs_) {
      if (!job->cancelled()) stopped.push_back(job->id());
      job->Stop(why);
    }
  }
  signal_->cv.SignalAll();
  return stopped;
}

std::vector<DeviceStatus> Engine::DeviceStatuses() const {
  absl::MutexLock lock(&mu_);
  const auto now = Clock::now();
  std::vector<DeviceStatus> statuses;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const Device& device = *devices_[d];
    const DeviceQueue& q = queues_[d];
    statuses.push_back(DeviceStatus{device.name(), device.kind(), device.kernels(),
                                    device.memory().budget(), device.memory().in_use(),
                                    device.memory().peak(), device.headroom_bytes(),
                                    device.idle_block_bytes(), q.shards_done(), q.shards_failed,
                                    q.shards_retried, q.flops(), q.BusySeconds(now), q.lost});
  }
  return statuses;
}

EngineStatus Engine::Status() const {
  absl::MutexLock lock(&mu_);
  EngineStatus status;
  status.queued_jobs = static_cast<int64_t>(jobs_.size());
  const auto now = Clock::now();
  double waited = 0;
  for (const auto& job : jobs_) {
    if (!job->waiting()) continue;
    ++status.waiting_jobs;
    waited += Seconds(now - job->start());
  }
  if (status.waiting_jobs > 0) status.average_wait_seconds = waited / status.waiting_jobs;
  status.pending_bytes = pending_->used();
  status.max_pending_bytes = pending_->max_bytes();
  status.pinned_budget_bytes = pinned_->budget();
  status.pinned_bytes_in_use = pinned_->in_use();
  status.pinned_peak_bytes = pinned_->peak();
  return status;
}

std::vector<ShardInterval> Engine::ShardIntervals(size_t device) const {
  absl::MutexLock lock(&mu_);
  const auto& intervals = queues_.at(device).intervals();
  return std::vector<ShardInterval>(intervals.begin(), intervals.end());
}

void Engine::WorkerLoop(size_t device) {
  mu_.Lock();
  while (true) {
    Task task;
    while (!stopping_ && !PickTask(device, &task)) {
      if (DestroyReleased()) continue;  // memory came back: pick again
      const auto deadline = NextDeadline();
      if (deadline == Clock::time_point::max()) {
        signal_->cv.Wait(&mu_);
      } else {
        signal_->cv.WaitWithTimeout(&mu_, absl::FromChrono(deadline - Clock::now()));
      }
    }
    if (task.job == nullptr) break;  // stopping, nothing picked
    mu_.Unlock();
    const absl::Status status = RunTask(device, task);
    if (!status.ok()) task.job->results().Unreserve(task.bytes);
    mu_.Lock();
    FinishTask(device, task, status);
    DestroyReleased();
    // Freed memory, stream room or a retry may make other tasks runnable.
    signal_->cv.SignalAll();
  }
  mu_.Unlock();
}

}  // namespace pricer
