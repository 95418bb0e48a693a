// The engine's workers taking and running tasks (engine.h).
#include <algorithm>
#include <memory>

#include "common/status_macros.h"
#include "server/scheduler/engine.h"

namespace pricer {
namespace {

using Clock = std::chrono::steady_clock;

// What taking a task of `kind` adds to a device's committed memory: the
// job's resident state unless it is held, and a shard buffer set unless one
// is idle, with the set's pinned host buffers. The first task here takes a
// set even when it copies terminal prices, so a job that holds memory can
// always run a shard: two jobs holding only their ST could otherwise wait
// for each other forever. A preparation holds nothing on a device.
struct MemoryTake {
  int64_t bytes = 0;
  int64_t pinned_bytes = 0;
  bool new_buffers = false;
};
MemoryTake MemoryToTake(const DevicePlan& plan, int64_t pinned_shard_bytes, const JobOnDevice& on,
                        TaskKind kind) {
  if (kind == TaskKind::kPrepare) return {};
  const bool new_buffers =
      plan.shard_bytes > 0 &&
      (kind == TaskKind::kShard ? on.buffers <= on.running_shards : on.buffers == 0);
  const int64_t resident = on.memory == JobOnDevice::Memory::kHeld ? 0 : plan.resident_bytes;
  if (!new_buffers) return {resident, 0, false};
  return {resident + plan.shard_bytes, pinned_shard_bytes, true};
}

// Records whether the job's stream had room for its next task.
void SetWaitingForReader(JobSchedule& s, bool waiting) {
  if (waiting) {
    s.state = JobState::kWaitingForReader;
  } else if (s.state == JobState::kWaitingForReader) {
    s.state = JobState::kRunning;
  }
}

}  // namespace

int64_t Engine::TaskBytes(const Job& job, TaskRef ref) const {
  const int64_t paths = job.spec().paths;
  switch (ref.kind) {
    case TaskKind::kPrepare:
      return 0;
    case TaskKind::kTerminalPrices: {
      const PathColumns columns = PriceChunkAt(job.plan(), job.spec(), ref.index);
      return paths * (columns.end - columns.begin) * static_cast<int64_t>(sizeof(float));
    }
    case TaskKind::kShard: {
      const Shard shard = ShardAt(job.plan(), job.spec(), ref.index);
      return ChunkPayloadBytes(job.spec().output, paths, job.spec().position_rows(),
                               job.spec().market.issuers(), shard.out_end - shard.out_begin);
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
  Shortage shortage;
  for (size_t at : q.PickOrder(device, schedules)) {
    if (TryTake(device, jobs[at], task, &shortage)) {
      q.MarkServed(*jobs[at], jobs[at]->schedule(mu_), device);
      return true;
    }
  }
  // A job waiting for its reader must not hold the memory that other jobs
  // wait for (a stalled client holds back only its own job): free what it
  // holds here, or on any device for the host's pinned memory, and try
  // again; it rebuilds its state when it resumes. The released memory
  // counts as free once DestroyReleased has run.
  bool freed = shortage.device && ReleaseJobsWaitingForReaders(device, false);
  for (size_t d = 0; shortage.pinned && d < queues_.size(); ++d) {
    freed = ReleaseJobsWaitingForReaders(d, true) || freed;
  }
  return freed && released_.empty() && PickTask(device, task);
}

bool Engine::ReleaseJobsWaitingForReaders(size_t device, bool pinned_only) {
  bool freed = false;
  for (const auto& job : queues_[device].jobs()) {
    const JobSchedule& s = job->schedule(mu_);
    const JobOnDevice& on = *s.on_device[device];
    const bool holds_pinned = on.buffers > 0 && job->pinned_shard_bytes()[device] > 0;
    if (s.state == JobState::kWaitingForReader && on.running == 0 &&
        on.memory == JobOnDevice::Memory::kHeld && (holds_pinned || !pinned_only)) {
      Release(job, device);
      freed = true;
    }
  }
  return freed;
}

bool Engine::TryTake(size_t device, const std::shared_ptr<Job>& job, Task* task,
                     Shortage* shortage) {
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
  const MemoryTake take = MemoryToTake(plan, job->pinned_shard_bytes()[device], on, ref.kind);
  const bool short_of_device =
      queues_[device].committed_bytes + take.bytes > devices_[device]->memory().budget();
  const bool short_of_pinned = pinned_committed_ + take.pinned_bytes > pinned_->budget();
  if (short_of_device || short_of_pinned) {
    // Short of memory only if the task could run otherwise: a job whose
    // reader has not made room waits for its reader, and freeing memory for
    // it would only take it from jobs that can run.
    SetWaitingForReader(s, !job->results().HasRoom(bytes));
    if (s.state != JobState::kWaitingForReader) {
      shortage->device = shortage->device || short_of_device;
      shortage->pinned = shortage->pinned || short_of_pinned;
    }
    return false;
  }
  SetWaitingForReader(s, !job->results().TryReserve(bytes));
  if (s.state == JobState::kWaitingForReader) return false;

  Commit(device, job, take.bytes, take.pinned_bytes, take.new_buffers, ref.kind);
  *task =
      Task{job, &on, ordinal, ref, bytes, is_retry, is_retry ? retry->failure : "", Clock::now()};
  if (is_retry) {
    ++queues_[device].shards_retried;
    s.retries.erase(retry);
  } else {
    ++s.next_task;
  }
  return true;
}

void Engine::Commit(size_t device, const std::shared_ptr<Job>& job, int64_t bytes,
                    int64_t pinned_bytes, bool new_buffers, TaskKind kind) {
  JobSchedule& s = job->schedule(mu_);
  JobOnDevice& on = *s.on_device[device];
  queues_[device].committed_bytes += bytes;
  pinned_committed_ += pinned_bytes;
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
  const PathColumns columns = PriceChunkAt(job.plan(), job.spec(), index);
  ResultChunk chunk;
  chunk.kind =
      columns.values ? ResultChunk::Kind::kInstrumentValues : ResultChunk::Kind::kTerminalPrices;
  chunk.begin = columns.begin;
  chunk.end = columns.end;
  chunk.rows = job.spec().paths;
  std::vector<float> prices(static_cast<size_t>(chunk.rows * (chunk.end - chunk.begin)));
  RETURN_IF_ERROR(state.CopyPathColumns(columns, prices.data()));
  chunk.values = SharedFloats(std::move(prices));
  job.RecordOutput(chunk.payload_bytes(), 0, 0);
  job.results().Push(std::move(chunk));
  return absl::OkStatus();
}

absl::Status Engine::RunShard(Job& job, DeviceJob& state, int64_t index) {
  const JobSpec& spec = job.spec();
  const Shard shard = ShardAt(job.plan(), spec, index);
  ShardOutput output;
  if (spec.output.full) {
    output.values = job.shard_buffers().Take(
        static_cast<size_t>((shard.out_end - shard.out_begin) * spec.paths));
  }
  // The contributions' arrays from their pool too: a fresh array's pages
  // would all fault and be zeroed.
  output.contribution_buffers = [&job](size_t floats) {
    return job.contribution_buffers().Take(floats);
  };
  RETURN_IF_ERROR(state.RunShard(shard, &output));
  job.RecordOutput(0, output.gemm_seconds, output.statistics_seconds);
  const int64_t paths = spec.paths;
  const int64_t chunk_columns = job.plan().chunk_columns;
  // The chunks are ranges of the shard's values and contributions, not
  // copies; the values' buffer goes back to its pool when the last of them
  // has been sent.
  SharedFloats values = std::move(output.owned_values);
  if (!values.empty()) {
    (void)job.shard_buffers().Share(std::move(output.values));  // unused: back to the pool
  } else if (spec.output.full) {
    values = SharedFloats(job.shard_buffers().Share(std::move(output.values)));
  }
  const ContributionBlocks contributions =
      ContributionBlocks::Take(&output.statistics, &job.contribution_buffers());
  for (int64_t begin = shard.out_begin; begin < shard.out_end; begin += chunk_columns) {
    ResultChunk chunk;
    chunk.begin = begin;
    chunk.end = std::min(begin + chunk_columns, shard.out_end);
    chunk.rows = paths;
    const int64_t offset = begin - shard.out_begin;
    const int64_t count = chunk.end - chunk.begin;
    if (spec.output.full) {
      chunk.values =
          values.Range(static_cast<size_t>(offset * paths), static_cast<size_t>(count * paths));
    }
    if (spec.output.statistics.any()) {
      chunk.statistics.AppendRange(output.statistics, offset, count);
    }
    if (!contributions.empty()) chunk.contributions = contributions.Range(offset, count);
    job.RecordOutput(chunk.payload_bytes(), 0, 0);
    job.results().Push(std::move(chunk));
  }
  return absl::OkStatus();
}

}  // namespace pricer
