#include "server/engine/engine.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace pricer {

Job::Job(std::string id, JobSpec spec, ShardPlan plan, int64_t device_count,
         int64_t max_pending_bytes, std::shared_ptr<WorkSignal> signal)
    : id_(std::move(id)),
      spec_(std::move(spec)),
      plan_(plan),
      prices_chunks_(spec_.output.terminal_prices
                         ? (spec_.market.issuers() + plan_.issuers_per_chunk - 1) /
                               plan_.issuers_per_chunk
                         : 0),
      signal_(std::move(signal)),
      start_(std::chrono::steady_clock::now()),
      results_(max_pending_bytes, [s = signal_] { s->Notify(); }),
      device_jobs_(static_cast<size_t>(device_count)) {}

void Job::Cancel(absl::Status why) {
  cancelled_ = true;
  results_.Close(std::move(why));
  signal_->Notify();
}

JobSummary Job::Summary() const {
  JobSummary summary;
  const double elapsed = elapsed_seconds_.load();
  summary.elapsed_seconds =
      elapsed >= 0
          ? elapsed
          : std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (plan_.shard_count > 0) {
    summary.flops = 2.0 * static_cast<double>(spec_.paths) *
                    static_cast<double>(spec_.market.issuers()) *
                    static_cast<double>(spec_.column_end - spec_.column_begin);
  }
  summary.bytes = bytes_.load();
  return summary;
}

Engine::Engine(std::vector<std::unique_ptr<Device>> devices, EngineOptions options)
    : options_(options),
      devices_(std::move(devices)),
      signal_(std::make_shared<WorkSignal>()),
      shards_done_(new std::atomic<int64_t>[devices_.size()]) {
  for (size_t d = 0; d < devices_.size(); ++d) {
    shards_done_[d] = 0;
    workers_.emplace_back([this, d] { WorkerLoop(d); });
  }
}

Engine::~Engine() {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    std::lock_guard lock(signal_->mu);
    stopping_ = true;
    jobs = jobs_;
  }
  for (const auto& job : jobs) job->Cancel(absl::UnavailableError("the server is shutting down"));
  signal_->cv.notify_all();
  for (std::thread& worker : workers_) worker.join();
  std::lock_guard lock(signal_->mu);
  for (const auto& job : jobs_) {
    job->device_jobs_.clear();
  }
  jobs_.clear();
}

absl::StatusOr<ShardPlan> Engine::FitToBudgets(const JobSpec& spec, ShardPlan plan) const {
  int64_t largest_budget = 0;
  for (const auto& device : devices_) {
    largest_budget = std::max(largest_budget, device->memory().budget());
  }
  auto fits = [&](int64_t width) {
    for (const auto& device : devices_) {
      if (device->JobBytes(spec, width) <= device->memory().budget()) return true;
    }
    return false;
  };
  // Narrower shards need less memory; the narrowest is one column block.
  while (!fits(plan.shard_columns) && plan.shard_columns > kColumnAlignment) {
    plan.shard_columns =
        std::max(kColumnAlignment, plan.shard_columns / 2 / kColumnAlignment * kColumnAlignment);
  }
  if (plan.shard_count > 0 && !fits(plan.shard_columns)) {
    int64_t needed = INT64_MAX;
    for (const auto& device : devices_) {
      needed = std::min(needed, device->JobBytes(spec, plan.shard_columns));
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        "the job needs ", needed, " bytes on a device (terminal prices for ", spec.paths,
        " paths x ", spec.market.issuers(), " issuers plus one shard of ", plan.shard_columns,
        " columns); the largest device budget is ", largest_budget, " bytes"));
  }
  if (plan.shard_count > 0) {
    plan.shard_count =
        (plan.gemm_end - plan.gemm_begin + plan.shard_columns - 1) / plan.shard_columns;
  }
  return plan;
}

absl::StatusOr<std::shared_ptr<Job>> Engine::Submit(JobSpec spec) {
  absl::StatusOr<ShardPlan> fitted = FitToBudgets(spec, PlanShards(spec));
  if (!fitted.ok()) return fitted.status();
  const ShardPlan plan = *fitted;
  auto job = std::make_shared<Job>(absl::StrCat("job-", next_job_id_++), std::move(spec), plan,
                                   static_cast<int64_t>(devices_.size()),
                                   options_.max_pending_bytes_per_job, signal_);
  {
    std::lock_guard lock(signal_->mu);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    jobs_.push_back(job);
  }
  signal_->cv.notify_all();
  return job;
}

std::vector<DeviceStatus> Engine::DeviceStatuses() const {
  std::vector<DeviceStatus> statuses;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const Device& device = *devices_[d];
    statuses.push_back(DeviceStatus{device.name(), device.kind(), device.memory().budget(),
                                    device.memory().in_use(), device.memory().peak(),
                                    shards_done_[d].load()});
  }
  return statuses;
}

std::vector<std::string> Engine::DeviceNames() const {
  std::vector<std::string> names;
  for (const auto& device : devices_) names.push_back(device->name());
  return names;
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

bool Engine::PickTask(Task* task) {
  // Retire first so that a finished or cancelled job frees its memory even
  // when no other work arrives.
  for (size_t k = 0; k < jobs_.size();) {
    const size_t before = jobs_.size();
    RetireIfDone(jobs_[k]);
    if (jobs_.size() == before) ++k;
  }
  for (size_t k = 0; k < jobs_.size(); ++k) {
    const size_t at = (round_robin_ + k) % jobs_.size();
    const std::shared_ptr<Job>& job = jobs_[at];
    if (job->cancelled_ || job->next_task_ >= job->task_count()) continue;
    const int64_t bytes = TaskBytes(*job, job->next_task_);
    if (!job->results_.TryReserve(bytes)) continue;
    *task = Task{job, job->next_task_++, bytes};
    ++job->running_;
    round_robin_ = at + 1;
    return true;
  }
  return false;
}

void Engine::RetireIfDone(const std::shared_ptr<Job>& job) {
  if (job->running_ > 0) return;
  if (!job->cancelled_ && job->next_task_ < job->task_count()) return;
  job->device_jobs_.clear();
  job->elapsed_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job->start_).count();
  job->results_.Close(absl::OkStatus());  // ignored when already closed by a failure
  jobs_.erase(std::find(jobs_.begin(), jobs_.end(), job));
}

void Engine::WorkerLoop(size_t device_index) {
  std::unique_lock lock(signal_->mu);
  while (true) {
    Task task;
    signal_->cv.wait(lock, [&] { return stopping_ || PickTask(&task); });
    if (task.job == nullptr) break;  // stopping, nothing picked
    lock.unlock();
    const absl::Status status = RunTask(device_index, task);
    if (!status.ok()) {
      task.job->results_.Unreserve(task.bytes);
      task.job->cancelled_ = true;
      task.job->results_.Close(absl::InternalError(
          absl::StrCat("device ", devices_[device_index]->name(), ": ", status.message())));
    }
    lock.lock();
    --task.job->running_;
    RetireIfDone(task.job);
    // The job's retirement or freed stream room may make other tasks runnable.
    signal_->cv.notify_all();
  }
}

absl::Status Engine::RunTask(size_t device_index, const Task& task) {
  Job& job = *task.job;
  if (job.cancelled_) {
    job.results_.Unreserve(task.bytes);
    return absl::OkStatus();
  }
  std::unique_ptr<DeviceJob>& device_job = job.device_jobs_[device_index];
  if (device_job == nullptr) {
    absl::StatusOr<std::unique_ptr<DeviceJob>> started =
        devices_[device_index]->StartJob(job.spec_);
    if (!started.ok()) return started.status();
    device_job = *std::move(started);
  }
  const int64_t paths = job.spec_.paths;

  if (task.index < job.prices_chunks_) {
    ResultChunk chunk;
    chunk.kind = ResultChunk::Kind::kTerminalPrices;
    chunk.begin = task.index * job.plan_.issuers_per_chunk;
    chunk.end = std::min(chunk.begin + job.plan_.issuers_per_chunk, job.spec_.market.issuers());
    chunk.rows = paths;
    chunk.values.resize(static_cast<size_t>(paths * (chunk.end - chunk.begin)));
    if (absl::Status s =
            device_job->CopyTerminalPrices(chunk.begin, chunk.end, chunk.values.data());
        !s.ok()) {
      return s;
    }
    job.bytes_ += chunk.payload_bytes();
    job.results_.Push(std::move(chunk));
    return absl::OkStatus();
  }

  const Shard shard = ShardAt(job.plan_, job.spec_, task.index - job.prices_chunks_);
  ShardOutput output;
  if (absl::Status s = device_job->RunShard(shard, &output); !s.ok()) return s;
  shards_done_[device_index]++;
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
    if (selection.statistics) chunk.statistics.AppendRange(output.statistics, offset, count);
    job.bytes_ += chunk.payload_bytes();
    job.results_.Push(std::move(chunk));
  }
  return absl::OkStatus();
}

}  // namespace pricer
