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

bool HasWork(const Job& job, const JobSchedule& s) {
  return s.next_task < job.tasks().size() || !s.retries.empty();
}

// What taking a task of `kind` adds to a device's committed memory: the
// job's resident state unless it is held, and a shard buffer set unless one
// is idle. The first task here takes a set even when it copies terminal
// prices, so a job that holds memory can always run a shard: two jobs
// holding only their ST could otherwise wait for each other forever. A
// preparation holds nothing on a device.
struct MemoryTake {
  int64_t bytes = 0;
  bool new_buffers = false;
};
MemoryTake MemoryToTake(const DevicePlan& plan, const JobOnDevice& on, TaskKind kind) {
  if (kind == TaskKind::kPrepare) return {};
  const bool new_buffers =
      plan.shard_bytes > 0 &&
      (kind == TaskKind::kShard ? on.buffers <= on.running_shards : on.buffers == 0);
  const int64_t resident = on.memory == JobOnDevice::Memory::kHeld ? 0 : plan.resident_bytes;
  return {resident + (new_buffers ? plan.shard_bytes : 0), new_buffers};
}

// Records whether the job's stream had room for its next task.
void SetWaitingForReader(JobSchedule& s, bool waiting) {
  if (waiting) {
    s.state = JobState::kWaitingForReader;
  } else if (s.state == JobState::kWaitingForReader) {
    s.state = JobState::kRunning;
  }
}

// The status that ends a job whose task failed for good: UNAVAILABLE when
// its device is gone (another server may run it), else INTERNAL.
absl::Status Failure(const absl::Status& cause, std::string message) {
  return absl::Status(
      IsDeviceLost(cause) ? absl::StatusCode::kUnavailable : absl::StatusCode::kInternal,
      std::move(message));
}

}  // namespace

Engine::Engine(std::vector<std::unique_ptr<Device>> devices, EngineOptions options)
    : options_(options),
      devices_(std::move(devices)),
      signal_(std::make_shared<WorkSignal>()),
      mu_(signal_->mu),
      pending_(std::make_shared<PendingBytes>(options.max_pending_bytes)),
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
    devices.push_back(PlannerDevice{devices_[d].get(), queues_[d].lost});
  }
  return devices;
}

absl::StatusOr<std::shared_ptr<Job>> Engine::Submit(JobSpec spec) {
  ShardPlan plan = PlanShards(spec);
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    // Under the lock: a device lost meanwhile is not planned on.
    ASSIGN_OR_RETURN(std::vector<DevicePlan> device_plans,
                     PlanDevices(spec, PlannerDevices(), options_.max_shards_in_flight, &plan));
    const double flops = plan.shard_count > 0
                             ? GemmFlops(spec, spec.column_end - spec.column_begin)
                             : 0.0;
    RETURN_IF_ERROR(CheckAdmission(spec.client, flops));
    job = std::make_shared<Job>(absl::StrCat("job-", next_job_id_++), std::move(spec), plan,
                                std::move(device_plans), options_.max_pending_bytes_per_job,
                                pending_, signal_);
    jobs_.push_back(job);
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (job->device_plans()[d].shards_in_flight > 0) queues_[d].Add(job);
    }
  }
  signal_->cv.SignalAll();
  return job;
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
    statuses.push_back(DeviceStatus{device.name(), device.kind(), device.memory().budget(),
                                    device.memory().in_use(), device.memory().peak(),
                                    q.shards_done(), q.shards_failed, q.shards_retried, q.flops(),
                                    q.BusySeconds(now), q.lost});
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
  return status;
}

std::vector<ShardInterval> Engine::ShardIntervals(size_t device) const {
  absl::MutexLock lock(&mu_);
  const auto& intervals = queues_.at(device).intervals();
  return std::vector<ShardInterval>(intervals.begin(), intervals.end());
}

int64_t Engine::TaskBytes(const Job& job, TaskRef ref) const {
  const int64_t paths = job.spec().paths;
  switch (ref.kind) {
    case TaskKind::kPrepare:
      return 0;
    case TaskKind::kTerminalPrices: {
      const IssuerRange issuers = PriceChunkAt(job.plan(), job.spec(), ref.index);
      return paths * (issuers.end - issuers.begin) * static_cast<int64_t>(sizeof(float));
    }
    case TaskKind::kShard: {
      const Shard shard = ShardAt(job.plan(), job.spec(), ref.index);
      return ChunkPayloadBytes(job.spec().output, paths, shard.out_end - shard.out_begin);
    }
  }
  return 0;
}

void Engine::ExpireAndTidy(size_t device) {
  const auto now = Clock::now();
  for (const auto& job : std::vector<std::shared_ptr<Job>>(queues_[device].jobs())) {
    const auto& deadline = job->spec().deadline;
    if (!job->cancelled() && deadline.has_value() && now >= *deadline) {
      job->Stop(absl::DeadlineExceededError("the job's deadline passed"));
    }
    Tidy(job);
  }
}

bool Engine::PickTask(size_t device, Task* task) {
  ExpireAndTidy(device);
  DeviceQueue& q = queues_[device];
  if (!q.lost.empty()) return false;
  const std::vector<std::shared_ptr<Job>>& jobs = q.jobs();
  std::vector<const JobSchedule*> schedules;
  for (const auto& job : jobs) schedules.push_back(&job->schedule(mu_));
  bool short_of_memory = false;
  for (size_t at : q.PickOrder(device, schedules)) {
    if (TryTake(device, jobs[at], task, &short_of_memory)) {
      q.MarkServed(*jobs[at], jobs[at]->schedule(mu_), device);
      return true;
    }
  }
  // A job waiting for its reader must not hold the memory that other jobs
  // wait for (a stalled client holds back only its own job): free what it
  // holds here and try again; it rebuilds its state when it resumes. The
  // released memory counts as free once DestroyReleased has run.
  return short_of_memory && ReleaseJobsWaitingForReaders(device) && released_.empty() &&
         PickTask(device, task);
}

bool Engine::ReleaseJobsWaitingForReaders(size_t device) {
  bool freed = false;
  for (const auto& job : queues_[device].jobs()) {
    const JobSchedule& s = job->schedule(mu_);
    const JobOnDevice& on = *s.on_device[device];
    if (s.state == JobState::kWaitingForReader && on.running == 0 &&
        on.memory == JobOnDevice::Memory::kHeld) {
      Release(job, device);
      freed = true;
    }
  }
  return freed;
}

bool Engine::TryTake(size_t device, const std::shared_ptr<Job>& job, Task* task,
                     bool* short_of_memory) {
  JobSchedule& s = job->schedule(mu_);
  if (job->cancelled() || s.state == JobState::kPreparing) return false;
  const DevicePlan& plan = job->device_plans()[device];
  JobOnDevice& on = *s.on_device[device];
  if (on.running >= plan.shards_in_flight) return false;

  // A retry that failed elsewhere comes first, then the next new task.
  auto retry = std::find_if(s.retries.begin(), s.retries.end(),
                            [&](const TaskRetry& r) { return r.failed_device != device; });
  const bool is_retry = retry != s.retries.end();
  if (!is_retry && s.next_task >= job->tasks().size()) return false;
  const int64_t ordinal = is_retry ? retry->ordinal : s.next_task;
  const TaskRef ref = job->tasks().At(ordinal);
  const int64_t bytes = TaskBytes(*job, ref);
  const MemoryTake take = MemoryToTake(plan, on, ref.kind);
  if (queues_[device].committed_bytes + take.bytes > devices_[device]->memory().budget()) {
    // Short of memory only if the task could run otherwise: a job whose
    // reader has not made room waits for its reader, and freeing memory for
    // it would only take it from jobs that can run.
    SetWaitingForReader(s, !job->results().HasRoom(bytes));
    if (s.state != JobState::kWaitingForReader) *short_of_memory = true;
    return false;
  }
  SetWaitingForReader(s, !job->results().TryReserve(bytes));
  if (s.state == JobState::kWaitingForReader) return false;

  Commit(device, job, take.bytes, take.new_buffers, ref.kind);
  *task = Task{job,     &on,      ordinal, ref, bytes, is_retry, is_retry ? retry->failure : "",
               Clock::now()};
  if (is_retry) {
    ++queues_[device].shards_retried;
    s.retries.erase(retry);
  } else {
    ++s.next_task;
  }
  return true;
}

void Engine::Commit(size_t device, const std::shared_ptr<Job>& job, int64_t bytes,
                    bool new_buffers, TaskKind kind) {
  JobSchedule& s = job->schedule(mu_);
  JobOnDevice& on = *s.on_device[device];
  queues_[device].committed_bytes += bytes;
  if (kind != TaskKind::kPrepare) on.memory = JobOnDevice::Memory::kHeld;
  if (new_buffers) ++on.buffers;
  ++on.running;
  if (kind == TaskKind::kShard) ++on.running_shards;
  ++s.running;
  s.state = kind == TaskKind::kPrepare ? JobState::kPreparing : JobState::kRunning;
  const auto now = Clock::now();
  queues_[device].TaskStarted(now);
  job->RecordStarted(now);
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

Clock::time_point Engine::NextDeadline() const {
  auto next = Clock::time_point::max();
  for (const auto& job : jobs_) {
    if (job->spec().deadline.has_value() && !job->cancelled()) {
      next = std::min(next, *job->spec().deadline);
    }
  }
  return next;
}

absl::Status Engine::RunTask(size_t device, const Task& task) {
  Job& job = *task.job;
  if (job.cancelled()) return absl::CancelledError("the job was stopped");
  if (task.ref.kind == TaskKind::kPrepare) return RunPrepare(job);
  JobOnDevice* on = task.on;
  DeviceJob* state = nullptr;
  {
    absl::MutexLock start(&on->state_mu);
    if (on->state == nullptr) {
      ASSIGN_OR_RETURN(on->state, devices_[device]->StartJob(job.spec(), job.plan().shard_columns));
    }
    state = on->state.get();
  }
  if (task.ref.kind == TaskKind::kTerminalPrices) {
    return RunTerminalPrices(job, *state, task.ref.index);
  }
  return RunShard(job, *state, task.ref.index);
}

absl::Status Engine::RunPrepare(Job& job) {
  JobSpec& spec = job.spec_to_prepare();
  RETURN_IF_ERROR(spec.prepare(spec));
  job.results().MarkReady();
  return absl::OkStatus();
}

absl::Status Engine::RunTerminalPrices(Job& job, DeviceJob& state, int64_t index) {
  const IssuerRange issuers = PriceChunkAt(job.plan(), job.spec(), index);
  ResultChunk chunk;
  chunk.kind = ResultChunk::Kind::kTerminalPrices;
  chunk.begin = issuers.begin;
  chunk.end = issuers.end;
  chunk.rows = job.spec().paths;
  chunk.values.resize(static_cast<size_t>(chunk.rows * (chunk.end - chunk.begin)));
  RETURN_IF_ERROR(state.CopyTerminalPrices(chunk.begin, chunk.end, chunk.values.data()));
  job.RecordOutput(chunk.payload_bytes(), 0, 0);
  job.results().Push(std::move(chunk));
  return absl::OkStatus();
}

absl::Status Engine::RunShard(Job& job, DeviceJob& state, int64_t index) {
  const JobSpec& spec = job.spec();
  const Shard shard = ShardAt(job.plan(), spec, index);
  ShardOutput output;
  RETURN_IF_ERROR(state.RunShard(shard, &output));
  job.RecordOutput(0, output.gemm_seconds, output.statistics_seconds);
  const int64_t paths = spec.paths;
  const int64_t chunk_columns = job.plan().chunk_columns;
  for (int64_t begin = shard.out_begin; begin < shard.out_end; begin += chunk_columns) {
    ResultChunk chunk;
    chunk.begin = begin;
    chunk.end = std::min(begin + chunk_columns, shard.out_end);
    chunk.rows = paths;
    const int64_t offset = begin - shard.out_begin;
    const int64_t count = chunk.end - chunk.begin;
    if (spec.output.full) {
      chunk.values.assign(output.values.begin() + offset * paths,
                          output.values.begin() + (offset + count) * paths);
    }
    if (spec.output.statistics.any()) {
      chunk.statistics.AppendRange(output.statistics, offset, count);
    }
    job.RecordOutput(chunk.payload_bytes(), 0, 0);
    job.results().Push(std::move(chunk));
  }
  return absl::OkStatus();
}

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
  // Counted before MarkLost, which may stop the job for good.
  const bool failed = !job.cancelled();
  if (failed) ++queues_[device].shards_failed;
  if (IsDeviceLost(status) && queues_[device].lost.empty()) MarkLost(device, status);
  if (!failed || job.cancelled()) return;
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
  std::unique_ptr<DeviceJob> state;
  {
    absl::MutexLock lock(&on.state_mu);  // no task runs here: never contended
    state = std::move(on.state);
  }
  if (state != nullptr) {
    // Its bytes stay committed until it is destroyed, so that nothing else
    // allocates them first.
    ++s.releasing;
    released_.push_back(Released{job, device, bytes, std::move(state)});
  } else {
    queues_[device].committed_bytes -= bytes;
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
  job->results().Close(absl::OkStatus());  // ignored when already closed by a failure
  auto it = std::find(jobs_.begin(), jobs_.end(), job);
  if (it != jobs_.end()) jobs_.erase(it);
  for (DeviceQueue& q : queues_) q.Remove(job);
}

}  // namespace pricer
