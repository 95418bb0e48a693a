// A job admitted by the engine: its spec and plan, its result stream, and the
// scheduling state the engine keeps for it (JobSchedule, reached only with
// the engine's lock held).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/model/job_spec.h"
#include "server/scheduler/buffer_pool.h"
#include "server/scheduler/device.h"
#include "server/scheduler/result_stream.h"
#include "server/scheduler/shard_planner.h"
#include "server/scheduler/task.h"

namespace pricer {

struct JobSummary {
  double elapsed_seconds = 0;
  // From admission to its first task, and whether one has started.
  double queued_seconds = 0;
  bool started = false;
  double flops = 0;   // 2 * P * N * priced columns
  int64_t bytes = 0;  // payload bytes of the chunks produced
  // Thread-seconds the devices spent in shard GEMMs and in statistics.
  double gemm_seconds = 0;
  double statistics_seconds = 0;
};

// The engine's lock and the workers' wake-up; shared with jobs (their
// streams wake the workers when a reader frees room), so a job may outlive
// the engine.
struct WorkSignal {
  absl::Mutex mu;
  absl::CondVar cv;

  // Wakes the workers. It takes `mu` first, so that a worker between looking
  // for work and waiting cannot miss the signal; but not within a Closing
  // scope of this signal on this thread, which may hold `mu` already.
  void Notify() {
    if (closing_ != this) {
      absl::MutexLock lock(&mu);
    }
    cv.SignalAll();
  }

  // Marks this thread as closing one of the signal's jobs' streams: the
  // engine does that holding `mu` (retiring or stopping a job), and closing
  // calls the stream's listener on this thread, whose reader (a cancelled
  // reactor dropping its chunks) releases pending bytes, which notifies.
  // Taking `mu` there again was a self-deadlock. Outside the engine's lock,
  // Job::Cancel notifies again, with `mu`, after its Closing scope.
  class Closing {
   public:
    explicit Closing(const WorkSignal& signal) : previous_(std::exchange(closing_, &signal)) {}
    ~Closing() { closing_ = previous_; }
    Closing(const Closing&) = delete;
    Closing& operator=(const Closing&) = delete;

   private:
    const WorkSignal* previous_;
  };

 private:
  static inline thread_local const WorkSignal* closing_ = nullptr;
};

// Where a job is in its life, as the engine schedules it.
enum class JobState {
  kQueued,            // admitted; no task has started
  kPreparing,         // its preparation task runs: no other task starts before it ends
  kRunning,           // its tasks are taken as devices free up
  kWaitingForReader,  // its stream had no room for its next task
  kFinishing,         // stopped or out of tasks: waits for running tasks and device states
  kRetired,           // stream closed, device memory back, off every queue
};

// What one job holds and runs on one device.
struct JobOnDevice {
  enum class Memory {
    kNone,  // nothing committed here
    kHeld,  // its resident bytes and `buffers` shard buffer sets are committed
  };
  Memory memory = Memory::kNone;
  int64_t buffers = 0;         // shard buffer sets committed
  int64_t running = 0;         // tasks running now
  int64_t running_shards = 0;  // of which shards (each holds a buffer set)

  // The device's state of the job: built by the first task that runs here,
  // used by the tasks running here, destroyed once none runs.
  absl::Mutex state_mu;
  std::unique_ptr<DeviceJob> state ABSL_GUARDED_BY(state_mu);
};

// A task that failed on one device and waits for another.
struct TaskRetry {
  int64_t ordinal = 0;
  size_t failed_device = 0;
  std::string failure;  // its message, naming the device
};

// The engine's scheduling state of one job.
struct JobSchedule {
  JobState state = JobState::kQueued;
  int64_t next_task = 0;  // ordinal in the job's TaskList
  int64_t running = 0;    // tasks running now, over all devices
  int64_t releasing = 0;  // device states released, not yet destroyed
  std::deque<TaskRetry> retries;
  std::vector<std::unique_ptr<JobOnDevice>> on_device;
  std::vector<uint64_t> served;  // per device: its turn when it last took a task there
};

class Job {
 public:
  Job(std::string id, JobSpec spec, ShardPlan plan, std::vector<DevicePlan> device_plans,
      std::vector<int64_t> pinned_shard_bytes, int64_t max_pending_bytes,
      std::shared_ptr<PendingBytes> shared_pending, std::shared_ptr<WorkSignal> signal);

  const std::string& id() const { return id_; }
  // Final once the job's preparation task has run (sizes are final at once).
  const JobSpec& spec() const { return spec_; }
  const ShardPlan& plan() const { return plan_; }
  const std::vector<DevicePlan>& device_plans() const { return device_plans_; }
  // Per device: the host's pinned bytes one shard buffer set holds there
  // (AllocationTable::pinned_shard_bytes; 0 where the backend stages nothing).
  const std::vector<int64_t>& pinned_shard_bytes() const { return pinned_shard_bytes_; }
  const TaskList& tasks() const { return tasks_; }
  ResultStream& results() { return results_; }
  // Where its shards' output buffers come from and go back to: the values',
  // and the contributions' arrays.
  BufferPool& shard_buffers() { return *shard_buffers_; }
  BufferPool& contribution_buffers() { return *contribution_buffers_; }

  // Stops the job: pending tasks are dropped, running ones end at their shard
  // boundary, the stream closes with `why`, and its device memory is freed.
  void Cancel(absl::Status why);
  // Cancel without waking the workers: for callers holding the engine lock.
  void Stop(absl::Status why);
  // Closes the stream with `status` (ignored once closed) in a
  // WorkSignal::Closing scope: the stream's listener runs on this thread,
  // which may hold the engine lock (Stop, Engine::Retire).
  void CloseResults(absl::Status status);
  bool cancelled() const { return stopped_->load(); }
  JobSummary Summary() const;
  // The GEMM flops of the whole job (none when it asks only for ST).
  double flops() const;

  // The engine's side. `engine_mu` is the engine's lock, held by the caller.
  JobSchedule& schedule(const absl::Mutex& engine_mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu) {
    engine_mu.AssertHeld();
    return schedule_;
  }
  // The spec for the preparation task, the only writer, which runs before
  // any other task (JobState::kPreparing).
  JobSpec& spec_to_prepare() { return spec_; }
  std::chrono::steady_clock::time_point start() const { return start_; }
  // Set when its first task starts; waiting() until then.
  void RecordStarted(std::chrono::steady_clock::time_point now);
  bool waiting() const { return queued_seconds_.load() < 0; }
  void RecordOutput(int64_t bytes, double gemm_seconds, double statistics_seconds);
  void RecordRetired(std::chrono::steady_clock::time_point now);

 private:
  const std::string id_;
  JobSpec spec_;
  const ShardPlan plan_;
  const std::vector<DevicePlan> device_plans_;
  const std::vector<int64_t> pinned_shard_bytes_;
  const TaskList tasks_;
  const std::shared_ptr<WorkSignal> signal_;
  const std::chrono::steady_clock::time_point start_;
  ResultStream results_;
  const std::shared_ptr<BufferPool> shard_buffers_ = BufferPool::Make();
  const std::shared_ptr<BufferPool> contribution_buffers_ = BufferPool::Make();
  // Also the spec's `stopped`, which the backends poll in long phases.
  const std::shared_ptr<std::atomic<bool>> stopped_ = std::make_shared<std::atomic<bool>>(false);
  std::atomic<int64_t> bytes_{0};
  std::atomic<double> elapsed_seconds_{-1};
  std::atomic<double> gemm_seconds_{0};
  std::atomic<double> statistics_seconds_{0};
  std::atomic<double> queued_seconds_{-1};
  JobSchedule schedule_;
};

// The GEMM flops of pricing `columns` columns of `spec`: 2 P N per column.
double GemmFlops(const JobSpec& spec, int64_t columns);

}  // namespace pricer
