#include "server/scheduler/engine.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pricer {
namespace {

constexpr size_t kMaxIntervalsPerDevice = 4096;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The GEMM flops of pricing `columns` columns of `spec`: 2 P N per column.
double GemmFlops(const JobSpec& spec, int64_t columns) {
  return 2.0 * static_cast<double>(spec.paths) * static_cast<double>(spec.market.issuers()) *
         static_cast<double>(columns);
}

// The flops of a whole job (none when it asks only for terminal prices).
double JobFlops(const JobSpec& spec, const ShardPlan& plan) {
  return plan.shard_count > 0 ? GemmFlops(spec, spec.column_end - spec.column_begin) : 0.0;
}

}  // namespace

Job::Job(std::string id, JobSpec spec, ShardPlan plan, std::vector<DevicePlan> device_plans,
         int64_t max_pending_bytes, std::shared_ptr<PendingBytes> shared_pending,
         std::shared_ptr<WorkSignal> signal)
    : id_(std::move(id)),
      spec_(std::move(spec)),
      plan_(plan),
      device_plans_(std::move(device_plans)),
      prices_chunks_(spec_.output.terminal_prices
                         ? (spec_.market.issuers() + plan_.issuers_per_chunk - 1) /
                               plan_.issuers_per_chunk
                         : 0),
      signal_(std::move(signal)),
      start_(std::chrono::steady_clock::now()),
      results_(
          max_pending_bytes, [s = signal_] { s->Notify(); }, std::move(shared_pending)) {
  for (size_t d = 0; d < device_plans_.size(); ++d) {
    on_device_.push_back(std::make_unique<OnDevice>());
  }
  served_.assign(device_plans_.size(), 0);
}

void Job::Cancel(absl::Status why) {
  Stop(std::move(why));
  signal_->Notify();
}

void Job::Stop(absl::Status why) {
  cancelled_ = true;
  results_.Close(std::move(why));
}

JobSummary Job::Summary() const {
  JobSummary summary;
  const double elapsed = elapsed_seconds_.load();
  summary.elapsed_seconds =
      elapsed >= 0 ? elapsed : Seconds(std::chrono::steady_clock::now() - start_);
  const double queued = queued_seconds_.load();
  summary.started = queued >= 0;
  summary.queued_seconds = summary.started ? queued : summary.elapsed_seconds;
  summary.flops = JobFlops(spec_, plan_);
  summary.bytes = bytes_.load();
  summary.gemm_seconds = gemm_seconds_.load();
  summary.statistics_seconds = statistics_seconds_.load();
  return summary;
}

Engine::Engine(std::vector<std::unique_ptr<Device>> devices, EngineOptions options)
    : options_(options),
      devices_(std::move(devices)),
      signal_(std::make_shared<WorkSignal>()),
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
    std::lock_guard lock(signal_->mu);
    stopping_ = true;
    for (const auto& job : jobs_) job->Stop(absl::UnavailableError("the server is shutting down"));
  }
  signal_->cv.notify_all();
  for (std::thread& worker : workers_) worker.join();
  std::unique_lock lock(signal_->mu);
  for (const auto& job : std::vector<std::shared_ptr<Job>>(jobs_)) Tidy(job);
  DestroyReleased(lock);
}

absl::StatusOr<std::vector<DevicePlan>> Engine::PlanDevices(const JobSpec& spec,
                                                            ShardPlan* plan) const {
  auto fits = [&](const Device& device, int64_t width) {
    return device.ResidentBytes(spec) + device.ShardBytes(spec, width) <= device.memory().budget();
  };
  auto fit_all = [&](int64_t width) {
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (queues_[d].lost.empty() && !fits(*devices_[d], width)) return false;
    }
    return true;
  };
  // Narrower shards need less memory; the narrowest is one column block.
  if (plan->shard_count > 0) {
    while (!fit_all(plan->shard_columns) && plan->shard_columns > kColumnAlignment) {
      plan->shard_columns =
          std::max(kColumnAlignment, plan->shard_columns / 2 / kColumnAlignment * kColumnAlignment);
    }
    plan->shard_count =
        (plan->gemm_end - plan->gemm_begin + plan->shard_columns - 1) / plan->shard_columns;
  }
  const int64_t width = plan->shard_count > 0 ? plan->shard_columns : 0;

  std::vector<DevicePlan> plans;
  int64_t usable = 0;
  std::string lost;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const Device* device = devices_[d].get();
    DevicePlan p;
    p.device = device->name();
    p.resident_bytes = device->ResidentBytes(spec);
    p.shard_bytes = width > 0 ? device->ShardBytes(spec, width) : 0;
    const int64_t room = device->memory().budget() - p.resident_bytes;
    if (!queues_[d].lost.empty()) {
      absl::StrAppend(&lost, lost.empty() ? "" : "; ", queues_[d].lost);
    } else if (room >= p.shard_bytes) {
      const int64_t by_memory = p.shard_bytes > 0 ? room / p.shard_bytes : INT64_MAX;
      p.shards_in_flight =
          std::min<int64_t>({by_memory, options_.max_shards_in_flight, device->MaxShardsInFlight(),
                             std::max<int64_t>(1, plan->shard_count)});
      ++usable;
    }
    plans.push_back(p);
  }
  if (std::all_of(queues_.begin(), queues_.end(),
                  [](const DeviceQueue& q) { return !q.lost.empty(); })) {
    return absl::UnavailableError(absl::StrCat("no device can take work: ", lost));
  }
  if (usable == 0) {
    int64_t needed = INT64_MAX;
    int64_t largest_budget = 0;
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (!queues_[d].lost.empty()) continue;
      needed = std::min(needed, plans[d].resident_bytes + plans[d].shard_bytes);
      largest_budget = std::max(largest_budget, devices_[d]->memory().budget());
    }
    return absl::ResourceExhaustedError(
        absl::StrCat("the job needs ", needed, " bytes on a device (terminal prices for ",
                     spec.paths, " paths x ", spec.market.issuers(), " issuers plus one shard of ",
                     width, " columns); the largest device budget is ", largest_budget, " bytes"));
  }
  return plans;
}

absl::StatusOr<std::shared_ptr<Job>> Engine::Submit(JobSpec spec) {
  ShardPlan plan = PlanShards(spec);
  std::shared_ptr<Job> job;
  {
    std::lock_guard lock(signal_->mu);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    // Under the lock: a device lost meanwhile is not planned on.
    absl::StatusOr<std::vector<DevicePlan>> device_plans = PlanDevices(spec, &plan);
    if (!device_plans.ok()) return device_plans.status();
    // The client's quotas first, so that a client over its own quota is
    // told so, and never another client's queue.
    if (absl::Status s = CheckQuotas(spec.client, JobFlops(spec, plan)); !s.ok()) return s;
    if (static_cast<int64_t>(jobs_.size()) >= options_.max_queued_jobs) {
      return absl::ResourceExhaustedError(
          absl::StrCat(jobs_.size(),
                       " jobs are queued or running, the server's limit "
                       "(--max-queued-jobs); retry later"));
    }
    job = std::make_shared<Job>(absl::StrCat("job-", next_job_id_++), std::move(spec), plan,
                                *std::move(device_plans), options_.max_pending_bytes_per_job,
                                pending_, signal_);
    jobs_.push_back(job);
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (job->device_plans_[d].shards_in_flight > 0) queues_[d].jobs.push_back(job);
    }
  }
  signal_->cv.notify_all();
  return job;
}

absl::Status Engine::CheckQuotas(const std::string& client, double flops) const {
  int64_t jobs = 0;
  double pending_flops = 0;
  for (const auto& job : jobs_) {
    if (job->spec_.client != client) continue;
    ++jobs;
    pending_flops += JobFlops(job->spec_, job->plan_);
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
  return absl::OkStatus();
}

std::vector<std::string> Engine::StopAll(const absl::Status& why) {
  std::vector<std::string> stopped;
  {
    std::lock_guard lock(signal_->mu);
    for (const auto& job : jobs_) {
      if (!job->cancelled_) stopped.push_back(job->id_);
      job->Stop(why);
    }
  }
  signal_->cv.notify_all();
  return stopped;
}

std::vector<DeviceStatus> Engine::DeviceStatuses() const {
  std::lock_guard lock(signal_->mu);
  const auto now = std::chrono::steady_clock::now();
  std::vector<DeviceStatus> statuses;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const Device& device = *devices_[d];
    const DeviceQueue& q = queues_[d];
    statuses.push_back(DeviceStatus{
        device.name(), device.kind(), device.memory().budget(), device.memory().in_use(),
        device.memory().peak(), q.shards_done, q.shards_failed, q.shards_retried, q.flops,
        q.busy_seconds + (q.running > 0 ? Seconds(now - q.busy_since) : 0.0), q.lost});
  }
  return statuses;
}

EngineStatus Engine::Status() const {
  std::lock_guard lock(signal_->mu);
  EngineStatus status;
  status.queued_jobs = static_cast<int64_t>(jobs_.size());
  const auto now = std::chrono::steady_clock::now();
  double waited = 0;
  for (const auto& job : jobs_) {
    if (job->queued_seconds_.load() >= 0) continue;
    ++status.waiting_jobs;
    waited += Seconds(now - job->start_);
  }
  if (status.waiting_jobs > 0) status.average_wait_seconds = waited / status.waiting_jobs;
  status.pending_bytes = pending_->used();
  status.max_pending_bytes = pending_->max_bytes();
  return status;
}

std::vector<ShardInterval> Engine::ShardIntervals(size_t device) const {
  std::lock_guard lock(signal_->mu);
  const auto& intervals = queues_.at(device).intervals;
  return std::vector<ShardInterval>(intervals.begin(), intervals.end());
}

int64_t Engine::TaskBytes(const Job& job, int64_t index) const {
  const int64_t paths = job.spec_.paths;
  if (index < job.prices_chunks_) {
    const int64_t first = index * job.plan_.issuers_per_chunk;
    const int64_t count = std::min(job.plan_.issuers_per_chunk, job.spec_.market.issuers() - first);
    return paths * count * static_cast<int64_t>(sizeof(float));
  }
  const Shard shard = ShardAt(job.plan_, job.spec_, index - job.prices_chunks_);
  return ChunkPayloadBytes(job.spec_.output, paths, shard.out_end - shard.out_begin);
}

bool Engine::PickTask(size_t device, Task* task) {
  DeviceQueue& q = queues_[device];
  const auto now = std::chrono::steady_clock::now();
  // Stop expired jobs, free what idle jobs hold, retire finished ones.
  for (const auto& job : std::vector<std::shared_ptr<Job>>(q.jobs)) {
    if (!job->cancelled_ && job->spec_.deadline.has_value() && now >= *job->spec_.deadline) {
      job->Stop(absl::DeadlineExceededError("the job's deadline passed"));
    }
    Tidy(job);
  }
  if (!q.lost.empty()) return false;
  // Candidates: higher priority first; within a priority the client served
  // longest ago, and within a client its job served longest ago. So a client
  // with 60 jobs queued takes one turn in two against a client with one.
  auto client_turn = [&](const Job& job) {
    auto it = q.client_served.find(job.spec_.client);
    return it == q.client_served.end() ? uint64_t{0} : it->second;
  };
  std::vector<size_t> order(q.jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const Job& a = *q.jobs[x];
    const Job& b = *q.jobs[y];
    if (a.spec_.priority != b.spec_.priority) return a.spec_.priority > b.spec_.priority;
    const uint64_t turn_a = client_turn(a), turn_b = client_turn(b);
    if (turn_a != turn_b) return turn_a < turn_b;
    return a.served_[device] < b.served_[device];
  });
  bool short_of_memory = false;
  for (size_t at : order) {
    Job& job = *q.jobs[at];
    if (TryTake(device, q.jobs[at], task, &short_of_memory)) {
      q.client_served[job.spec_.client] = job.served_[device] = ++q.turn;
      return true;
    }
  }
  if (!short_of_memory) return false;
  // A job waiting for its reader must not hold the memory that other jobs
  // wait for (a stalled client holds back only its own job): free what it
  // holds here and try again; it rebuilds its state when it resumes.
  bool freed = false;
  for (const auto& job : q.jobs) {
    const Job::OnDevice& on = *job->on_device_[device];
    if (job->waiting_for_reader_ && on.running == 0 && (on.resident || on.buffers > 0)) {
      Release(job, device);
      freed = true;
    }
  }
  // The released memory counts as free once DestroyReleased has run.
  return freed && released_.empty() && PickTask(device, task);
}

bool Engine::TryTake(size_t device, const std::shared_ptr<Job>& job, Task* task,
                     bool* short_of_memory) {
  if (job->cancelled_) return false;
  const DevicePlan& plan = job->device_plans_[device];
  Job::OnDevice& on = *job->on_device_[device];
  if (on.running >= plan.shards_in_flight) return false;

  // A retry that failed elsewhere comes first, then the next new task.
  auto retry = std::find_if(job->retries_.begin(), job->retries_.end(),
                            [&](const Job::Retry& r) { return r.failed_device != device; });
  const bool is_retry = retry != job->retries_.end();
  if (!is_retry && job->next_task_ >= job->task_count()) return false;
  const int64_t index = is_retry ? retry->task : job->next_task_;
  const bool is_shard = index >= job->prices_chunks_;

  // Memory: the job's resident state, and a shard buffer set unless one is
  // idle. The first task here takes a set even when it copies terminal
  // prices, so a job that holds memory can always run a shard: two jobs
  // holding only their ST could otherwise wait for each other forever.
  const bool new_buffers =
      plan.shard_bytes > 0 && (is_shard ? on.buffers <= on.running_shards : on.buffers == 0);
  const int64_t needed =
      (on.resident ? 0 : plan.resident_bytes) + (new_buffers ? plan.shard_bytes : 0);
  DeviceQueue& q = queues_[device];
  const int64_t bytes = TaskBytes(*job, index);
  if (q.committed_bytes + needed > devices_[device]->memory().budget()) {
    // Short of memory only if the task could run otherwise: a job whose
    // reader has not made room waits for its reader, and freeing memory for
    // it would only take it from jobs that can run.
    job->waiting_for_reader_ = !job->results_.HasRoom(bytes);
    if (!job->waiting_for_reader_) *short_of_memory = true;
    return false;
  }
  job->waiting_for_reader_ = !job->results_.TryReserve(bytes);
  if (job->waiting_for_reader_) return false;

  q.committed_bytes += needed;
  on.resident = true;
  if (new_buffers) ++on.buffers;
  ++on.running;
  if (is_shard) ++on.running_shards;
  ++job->running_;
  const auto now = std::chrono::steady_clock::now();
  if (q.running++ == 0) q.busy_since = now;
  if (job->queued_seconds_.load() < 0) job->queued_seconds_ = Seconds(now - job->start_);
  *task = Task{job, index, bytes, is_retry, is_retry ? retry->failure : "", now};
  if (is_retry) {
    ++q.shards_retried;
    job->retries_.erase(retry);
  } else {
    ++job->next_task_;
  }
  return true;
}

void Engine::WorkerLoop(size_t device) {
  std::unique_lock lock(signal_->mu);
  while (true) {
    Task task;
    while (!stopping_ && !PickTask(device, &task)) {
      if (DestroyReleased(lock)) continue;  // memory came back: pick again
      signal_->cv.wait_until(lock, NextDeadline());
    }
    if (task.job == nullptr) break;  // stopping, nothing picked
    lock.unlock();
    const absl::Status status = RunTask(device, task);
    if (!status.ok()) task.job->results_.Unreserve(task.bytes);
    lock.lock();
    FinishTask(device, task, status);
    DestroyReleased(lock);
    // Freed memory, stream room or a retry may make other tasks runnable.
    signal_->cv.notify_all();
  }
}

std::chrono::steady_clock::time_point Engine::NextDeadline() const {
  auto next = std::chrono::steady_clock::time_point::max();
  for (const auto& job : jobs_) {
    if (job->spec_.deadline.has_value() && !job->cancelled_) {
      next = std::min(next, *job->spec_.deadline);
    }
  }
  return next;
}

absl::Status Engine::RunTask(size_t device, const Task& task) {
  Job& job = *task.job;
  if (job.cancelled_) return absl::CancelledError("the job was stopped");
  Job::OnDevice& on = *job.on_device_[device];
  {
    std::lock_guard start(on.start_mu);
    if (on.state == nullptr) {
      absl::StatusOr<std::unique_ptr<DeviceJob>> started =
          devices_[device]->StartJob(job.spec_, job.plan_.shard_columns);
      if (!started.ok()) return started.status();
      on.state = *std::move(started);
    }
  }
  const int64_t paths = job.spec_.paths;

  if (task.index < job.prices_chunks_) {
    ResultChunk chunk;
    chunk.kind = ResultChunk::Kind::kTerminalPrices;
    chunk.begin = task.index * job.plan_.issuers_per_chunk;
    chunk.end = std::min(chunk.begin + job.plan_.issuers_per_chunk, job.spec_.market.issuers());
    chunk.rows = paths;
    chunk.values.resize(static_cast<size_t>(paths * (chunk.end - chunk.begin)));
    if (absl::Status s = on.state->CopyTerminalPrices(chunk.begin, chunk.end, chunk.values.data());
        !s.ok()) {
      return s;
    }
    job.bytes_ += chunk.payload_bytes();
    job.results_.Push(std::move(chunk));
    return absl::OkStatus();
  }

  const Shard shard = ShardAt(job.plan_, job.spec_, task.index - job.prices_chunks_);
  ShardOutput output;
  if (absl::Status s = on.state->RunShard(shard, &output); !s.ok()) return s;
  job.gemm_seconds_ += output.gemm_seconds;
  job.statistics_seconds_ += output.statistics_seconds;
  const OutputSelection& selection = job.spec_.output;
  for (int64_t begin = shard.out_begin; begin < shard.out_end; begin += job.plan_.chunk_columns) {
    ResultChunk chunk;
    chunk.begin = begin;
    chunk.end = std::min(begin + job.plan_.chunk_columns, shard.out_end);
    chunk.rows = paths;
    const int64_t offset = begin - shard.out_begin;
    const int64_t count = chunk.end - chunk.begin;
    if (selection.full) {
      chunk.values.assign(output.values.begin() + offset * paths,
                          output.values.begin() + (offset + count) * paths);
    }
    if (selection.statistics.any()) {
      chunk.statistics.AppendRange(output.statistics, offset, count);
    }
    job.bytes_ += chunk.payload_bytes();
    job.results_.Push(std::move(chunk));
  }
  return absl::OkStatus();
}

void Engine::FinishTask(size_t device, Task& task, const absl::Status& status) {
  Job& job = *task.job;
  Job::OnDevice& on = *job.on_device_[device];
  DeviceQueue& q = queues_[device];
  const bool is_shard = task.index >= job.prices_chunks_;
  const auto now = std::chrono::steady_clock::now();
  --on.running;
  if (is_shard) --on.running_shards;
  --job.running_;
  if (--q.running == 0) q.busy_seconds += Seconds(now - q.busy_since);

  if (status.ok() && is_shard) {
    ++q.shards_done;
    const Shard shard = ShardAt(job.plan_, job.spec_, task.index - job.prices_chunks_);
    q.flops += GemmFlops(job.spec_, shard.out_end - shard.out_begin);
    q.intervals.push_back(ShardInterval{job.id_, task.index - job.prices_chunks_, task.start, now});
    if (q.intervals.size() > kMaxIntervalsPerDevice) q.intervals.pop_front();
  }
  // Counted before MarkLost, which may stop the job for good.
  const bool failed = !status.ok() && !job.cancelled_;
  if (failed) ++q.shards_failed;
  if (IsDeviceLost(status) && q.lost.empty()) MarkLost(device, status);
  if (failed && !job.cancelled_) {
    const std::string failure =
        absl::StrCat("device ", devices_[device]->name(), ": ", status.message());
    if (task.is_retry) {
      job.Stop(
          absl::InternalError(absl::StrCat(failure, " (retried after ", task.first_failure, ")")));
    } else if (CanRunElsewhere(job, device)) {
      job.retries_.push_back(Job::Retry{task.index, device, failure});
    } else {
      job.Stop(absl::InternalError(failure));
    }
  }
  Tidy(task.job);
}

bool Engine::CanRunElsewhere(const Job& job, size_t device) const {
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (d != device && job.device_plans_[d].shards_in_flight > 0 && queues_[d].lost.empty()) {
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
    if (job->cancelled_ || !job->has_work() || job->device_plans_[device].shards_in_flight == 0) {
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
    for (const Job::Retry& retry : job->retries_) {
      if (!CanRunElsewhere(*job, retry.failed_device)) {
        job->Stop(absl::InternalError(retry.failure));
        break;
      }
    }
  }
}

void Engine::Release(const std::shared_ptr<Job>& job, size_t device) {
  Job::OnDevice& on = *job->on_device_[device];
  const DevicePlan& plan = job->device_plans_[device];
  const int64_t bytes = (on.resident ? plan.resident_bytes : 0) + on.buffers * plan.shard_bytes;
  if (on.state != nullptr) {
    // Its bytes stay committed until it is destroyed, so that nothing else
    // allocates them first.
    ++job->releasing_;
    released_.push_back(Released{job, device, bytes, std::move(on.state)});
  } else {
    queues_[device].committed_bytes -= bytes;
  }
  on.resident = false;
  on.buffers = 0;
}

bool Engine::DestroyReleased(std::unique_lock<std::mutex>& lock) {
  if (released_.empty()) return false;
  std::vector<Released> released = std::move(released_);
  released_.clear();
  lock.unlock();
  for (Released& r : released) r.state.reset();
  lock.lock();
  for (Released& r : released) {
    queues_[r.device].committed_bytes -= r.bytes;
    --r.job->releasing_;
    Tidy(r.job);
  }
  signal_->cv.notify_all();
  return true;
}

void Engine::Tidy(const std::shared_ptr<Job>& job) {
  const bool done = job->cancelled_ || !job->has_work();
  if (!done || job->retired_) return;
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (job->on_device_[d]->running == 0) Release(job, d);
  }
  // Retire once nothing runs and its memory is back: a client that sees the
  // stream end sees the devices' bytes returned.
  if (job->running_ > 0 || job->releasing_ > 0) return;
  // Retire: nothing runs and nothing is left.
  job->retired_ = true;
  job->elapsed_seconds_ = Seconds(std::chrono::steady_clock::now() - job->start_);
  job->results_.Close(absl::OkStatus());  // ignored when already closed by a failure
  auto erase = [&](std::vector<std::shared_ptr<Job>>& jobs) {
    auto it = std::find(jobs.begin(), jobs.end(), job);
    if (it != jobs.end()) jobs.erase(it);
  };
  erase(jobs_);
  for (DeviceQueue& q : queues_) {
    erase(q.jobs);
    // A client with no job left here starts afresh when it comes back.
    const std::string& client = job->spec_.client;
    if (std::none_of(q.jobs.begin(), q.jobs.end(),
                     [&](const std::shared_ptr<Job>& j) { return j->spec_.client == client; })) {
      q.client_served.erase(client);
    }
  }
}

}  // namespace pricer
