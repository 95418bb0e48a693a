// The engine's workers finishing tasks: failures and retries, lost devices,
// and giving a job's device memory back (engine.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/scheduler/engine.h"

namespace pricer {
namespace {

using Clock = std::chrono::steady_clock;

bool HasWork(const Job& job, const JobSchedule& s) {
  return s.next_task < job.tasks().size() || !s.retries.empty();
}

// The status that ends a job whose task failed for good: UNAVAILABLE when
// its device is gone (another server may run it), else INTERNAL.
absl::Status Failure(const absl::Status& cause, std::string message) {
  return absl::Status(
      IsDeviceLost(cause) ? absl::StatusCode::kUnavailable : absl::StatusCode::kInternal,
      std::move(message));
}

}  // namespace

void Engine::FinishTask(size_t device, Task& task, const absl::Status& status) {
  Job& job = *task.job;
  JobSchedule& s = job.schedule(mu_);
  JobOnDevice& on = *s.on_device[device];
  DeviceQueue& q = queues_[device];
  const auto now = Clock::now();
  --on.running;
  if (task.ref.kind == TaskKind::kShard) --on.running_shards;
  --s.running;
  q.TaskEnded(now);

  if (task.ref.kind == TaskKind::kPrepare) {
    // A preparation's error is the request's (a correlation that is not
    // positive definite, a stored set gone): the job ends with it.
    if (!status.ok()) job.Stop(status);
    s.state = JobState::kRunning;
  } else if (status.ok() && task.ref.kind == TaskKind::kShard) {
    const Shard shard = ShardAt(job.plan(), job.spec(), task.ref.index);
    q.ShardDone(ShardInterval{job.id(), task.ref.index, task.start, now},
                GemmFlops(job.spec(), shard.out_end - shard.out_begin));
  } else if (!status.ok()) {
    HandleFailure(device, task, status);
  }
  Tidy(task.job);
}

void Engine::HandleFailure(size_t device, Task& task, const absl::Status& status) {
  Job& job = *task.job;
  // A job stopping for its own reasons (cancelled, failed elsewhere, drained,
  // or its deadline passed, which a backend polling StopStatus may see before
  // the engine does): the device did not fail, unless it says it is lost.
  const absl::Status stop = StopStatus(job.spec());
  if (stop.ok()) ++queues_[device].shards_failed;  // before MarkLost, which may stop the job
  if (IsDeviceLost(status) && queues_[device].lost.empty()) MarkLost(device, status);
  if (!stop.ok()) {
    if (!job.cancelled()) job.Stop(stop);
    return;
  }
  if (job.cancelled()) return;
  const std::string failure =
      absl::StrCat("device ", devices_[device]->name(), ": ", status.message());
  if (task.is_retry) {
    job.Stop(Failure(status, absl::StrCat(failure, " (retried after ", task.first_failure, ")")));
  } else if (CanRunElsewhere(job, device)) {
    JobSchedule& s = job.schedule(mu_);
    s.retries.push_back(TaskRetry{task.ordinal, device, failure});
    if (s.state == JobState::kFinishing) s.state = JobState::kRunning;
  } else {
    job.Stop(Failure(status, failure));
  }
}

bool Engine::CanRunElsewhere(const Job& job, size_t device) const {
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (d != device && job.device_plans()[d].shards_in_flight > 0 && queues_[d].lost.empty()) {
      return true;
    }
  }
  return false;
}

void Engine::MarkLost(size_t device, const absl::Status& why) {
  queues_[device].lost = std::string(why.message());
  if (options_.on_device_lost) {
    options_.on_device_lost(std::any_of(queues_.begin(), queues_.end(),
                                        [](const DeviceQueue& q) { return q.lost.empty(); }));
  }
  for (const auto& job : jobs_) {
    const JobSchedule& s = job->schedule(mu_);
    if (job->cancelled() || !HasWork(*job, s) ||
        job->device_plans()[device].shards_in_flight == 0) {
      continue;
    }
    if (!CanRunElsewhere(*job, device)) {
      job->Stop(absl::UnavailableError(absl::StrCat("device ", devices_[device]->name(),
                                                    " was lost (", why.message(),
                                                    ") and no other device can run the job")));
      continue;
    }
    // A retry waits for a device other than the one it failed on: with none
    // left, the failure ends the job, as on a one-device engine.
    for (const TaskRetry& retry : s.retries) {
      if (!CanRunElsewhere(*job, retry.failed_device)) {
        job->Stop(absl::InternalError(retry.failure));
        break;
      }
    }
  }
}

void Engine::Release(const std::shared_ptr<Job>& job, size_t device) {
  JobSchedule& s = job->schedule(mu_);
  JobOnDevice& on = *s.on_device[device];
  const DevicePlan& plan = job->device_plans()[device];
  const int64_t resident = on.memory == JobOnDevice::Memory::kHeld ? plan.resident_bytes : 0;
  const int64_t bytes = resident + on.buffers * plan.shard_bytes;
  const int64_t pinned = on.buffers * job->pinned_shard_bytes()[device];
  std::unique_ptr<DeviceJob> state;
  {
    absl::MutexLock lock(&on.state_mu);  // no task runs here: never contended
    state = std::move(on.state);
  }
  if (state != nullptr) {
    // Its bytes stay committed until it is destroyed, so that nothing else
    // allocates them first.
    ++s.releasing;
    released_.push_back(Released{job, device, bytes, pinned, std::move(state)});
  } else {
    queues_[device].committed_bytes -= bytes;
    pinned_committed_ -= pinned;
  }
  on.memory = JobOnDevice::Memory::kNone;
  on.buffers = 0;
}

bool Engine::DestroyReleased() {
  if (released_.empty()) return false;
  std::vector<Released> released = std::move(released_);
  released_.clear();
  mu_.Unlock();
  for (Released& r : released) r.state.reset();
  mu_.Lock();
  for (Released& r : released) {
    queues_[r.device].committed_bytes -= r.bytes;
    pinned_committed_ -= r.pinned_bytes;
    --r.job->schedule(mu_).releasing;
    Tidy(r.job);
  }
  signal_->cv.SignalAll();
  return true;
}

void Engine::Tidy(const std::shared_ptr<Job>& job) {
  JobSchedule& s = job->schedule(mu_);
  if (s.state == JobState::kRetired || (!job->cancelled() && HasWork(*job, s))) return;
  s.state = JobState::kFinishing;
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (s.on_device[d]->running == 0) Release(job, d);
  }
  // Retire once nothing runs and its memory is back: a client that sees the
  // stream end sees the devices' bytes returned.
  if (s.running == 0 && s.releasing == 0) Retire(job);
}

void Engine::Retire(const std::shared_ptr<Job>& job) {
  job->schedule(mu_).state = JobState::kRetired;
  job->RecordRetired(Clock::now());
  job->CloseResults(absl::OkStatus());  // ignored when already closed by a failure
  auto it = std::find(jobs_.begin(), jobs_.end(), job);
  if (it != jobs_.end()) jobs_.erase(it);
  for (DeviceQueue& q : queues_) q.Remove(job);
}

}  // namespace pricer
