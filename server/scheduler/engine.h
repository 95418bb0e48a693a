// The engine: devices, their queues and workers, and the jobs they share.
//
// A job is cut into tasks (terminal-price chunks, then column shards). Each
// device has a DeviceQueue of the jobs admitted to it and a few worker
// threads (its shard slots). A worker takes the next task of the job that
// comes first in its queue (highest priority, then the client served longest
// ago, then that client's job served longest ago: round robin between
// clients, then between one client's jobs) and that
// (a) has fewer shards running on this device than its plan allows, (b) fits
// the device's memory budget given what other jobs hold there, and (c) has
// room in its result stream. So a device runs its shards one after another
// (or a few at once where the budget holds them), devices run in parallel and
// pull work as they free up, and a slow reader holds back only its own job:
// when other jobs wait for memory, a job waiting for its reader gives back
// what it holds on the device.
// Engine work never runs on the caller's (gRPC's) threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "server/scheduler/device.h"
#include "server/model/job_spec.h"
#include "server/scheduler/result_stream.h"
#include "server/scheduler/shard_planner.h"

namespace pricer {

struct EngineOptions {
  // Bound on the chunk bytes one job holds unsent (reserved, queued or being
  // written). A shard bigger than this runs only when nothing is pending.
  int64_t max_pending_bytes_per_job = 256LL << 20;
  // Bound on the chunk bytes all jobs together hold unsent.
  int64_t max_pending_bytes = 1LL << 30;
  // Jobs admitted and not yet finished; Submit refuses more.
  int64_t max_queued_jobs = 64;
  // Worker threads per device: the most shards one device runs at once.
  int max_shards_in_flight = 4;
  // Per-client quotas (JobSpec::client): jobs admitted and not finished, and
  // the GEMM flops of those jobs; 0 means no limit.
  int64_t max_jobs_per_client = 0;
  double max_pending_flops_per_client = 0;
  // Called, under the engine's lock (it must not call the engine), when a
  // device is marked lost; the argument says whether any device is usable.
  std::function<void(bool any_device_usable)> on_device_lost;
};

struct DeviceStatus {
  std::string name;
  std::string kind;
  int64_t memory_budget_bytes = 0;
  int64_t bytes_in_use = 0;
  int64_t peak_bytes = 0;
  int64_t shards_done = 0;
  int64_t shards_failed = 0;   // tasks that failed here (each retried elsewhere or fatal)
  int64_t shards_retried = 0;  // tasks run here after failing on another device
  double flops = 0;            // GEMM flops of the shards done here (2 P N per column)
  double busy_seconds = 0;     // time with at least one task running
  // Why the device takes no more work (a DeviceLost failure); empty while
  // it is usable.
  std::string lost;
};

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

struct EngineStatus {
  int64_t queued_jobs = 0;   // admitted, not finished
  int64_t waiting_jobs = 0;  // of which no task has started yet
  // How long the waiting jobs have waited so far, on average (0: none waits).
  double average_wait_seconds = 0;
  int64_t pending_bytes = 0;
  int64_t max_pending_bytes = 0;
};

// One shard as the engine ran it, for checking the schedule.
struct ShardInterval {
  std::string job_id;
  int64_t shard = 0;
  std::chrono::steady_clock::time_point start;
  std::chrono::steady_clock::time_point end;
};

// How a job uses one device.
struct DevicePlan {
  std::string device;
  int64_t shards_in_flight = 0;  // 0: the job does not fit this device
  int64_t resident_bytes = 0;    // ST and per-job state
  int64_t shard_bytes = 0;       // per running shard
};

// Wakes the workers; shared with jobs so a job may outlive the engine.
struct WorkSignal {
  std::mutex mu;
  std::condition_variable cv;
  void Notify() {
    { std::lock_guard lock(mu); }
    cv.notify_all();
  }
};

class Job {
 public:
  const std::string& id() const { return id_; }
  const JobSpec& spec() const { return spec_; }
  const ShardPlan& plan() const { return plan_; }
  const std::vector<DevicePlan>& device_plans() const { return device_plans_; }
  ResultStream& results() { return results_; }

  // Stops the job: pending tasks are dropped, running ones end at their shard
  // boundary, the stream closes with `why`, and its device memory is freed.
  void Cancel(absl::Status why);
  JobSummary Summary() const;

  // Constructed by Engine::Submit only.
  Job(std::string id, JobSpec spec, ShardPlan plan, std::vector<DevicePlan> device_plans,
      int64_t max_pending_bytes, std::shared_ptr<PendingBytes> shared_pending,
      std::shared_ptr<WorkSignal> signal);

 private:
  friend class Engine;

  // A task that failed on one device and waits for another.
  struct Retry {
    int64_t task = 0;
    size_t failed_device = 0;
    std::string failure;
  };

  // What the job holds on one device. Guarded by the engine's lock.
  struct OnDevice {
    bool resident = false;             // ResidentBytes committed
    int64_t buffers = 0;               // shard buffer sets committed
    int64_t running = 0;               // tasks running now
    int64_t running_shards = 0;        // of which shards (each holds a buffer set)
    std::unique_ptr<DeviceJob> state;  // touched by this device's workers only
    std::mutex start_mu;               // one worker builds `state`
  };

  // Cancel without waking the workers: for callers holding the engine lock.
  void Stop(absl::Status why);
  int64_t task_count() const { return prices_chunks_ + plan_.shard_count; }
  bool has_work() const { return next_task_ < task_count() || !retries_.empty(); }

  const std::string id_;
  const JobSpec spec_;
  const ShardPlan plan_;
  const std::vector<DevicePlan> device_plans_;
  const int64_t prices_chunks_;
  const std::shared_ptr<WorkSignal> signal_;
  const std::chrono::steady_clock::time_point start_;
  ResultStream results_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> bytes_{0};
  std::atomic<double> elapsed_seconds_{-1};
  std::atomic<double> gemm_seconds_{0};
  std::atomic<double> statistics_seconds_{0};
  std::atomic<double> queued_seconds_{-1};  // set when its first task starts

  // Guarded by signal_->mu (the engine's lock).
  int64_t next_task_ = 0;
  int64_t running_ = 0;
  int64_t releasing_ = 0;  // device states released, not yet destroyed
  bool retired_ = false;
  bool waiting_for_reader_ = false;  // its stream had no room for its next task
  std::deque<Retry> retries_;
  std::vector<std::unique_ptr<OnDevice>> on_device_;
  std::vector<uint64_t> served_;  // per device: its turn when it last took a task there
};

class Engine {
 public:
  explicit Engine(std::vector<std::unique_ptr<Device>> devices, EngineOptions options = {});
  ~Engine();  // cancels the jobs still running (UNAVAILABLE) and joins the workers

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Plans and queues a validated job; its chunks arrive on job->results().
  // RESOURCE_EXHAUSTED when the job fits no device's budget, the queue is
  // full or the client is over a quota, UNAVAILABLE when every device is
  // lost; nothing is allocated then.
  absl::StatusOr<std::shared_ptr<Job>> Submit(JobSpec spec);
  // Stops every job with `why` (a drain that ran out of time); their ids.
  std::vector<std::string> StopAll(const absl::Status& why);

  std::vector<DeviceStatus> DeviceStatuses() const;
  EngineStatus Status() const;
  // The most recent shards each device ran (up to 4096 per device).
  std::vector<ShardInterval> ShardIntervals(size_t device) const;

 private:
  struct Task {
    std::shared_ptr<Job> job;
    int64_t index = 0;
    int64_t bytes = 0;      // reserved in the job's stream
    bool is_retry = false;  // a second try, after `first_failure`
    std::string first_failure;
    std::chrono::steady_clock::time_point start;
  };

  // Per device: its queue of admitted jobs and its scheduling counters.
  struct DeviceQueue {
    std::vector<std::shared_ptr<Job>> jobs;
    // Round robin by "served longest ago": a turn counts up each time a task
    // is taken here, and each client (JobSpec::client) with jobs here keeps
    // the turn it was last served at (0: not yet).
    uint64_t turn = 0;
    std::map<std::string, uint64_t> client_served;
    int64_t committed_bytes = 0;  // what admitted work may allocate here
    int64_t running = 0;
    std::chrono::steady_clock::time_point busy_since;
    double busy_seconds = 0;
    int64_t shards_done = 0;
    int64_t shards_failed = 0;
    int64_t shards_retried = 0;
    double flops = 0;
    std::deque<ShardInterval> intervals;
    std::string lost;  // set once by a DeviceLost failure; then nothing is planned here
  };

  // The shard width and per-device plans for `spec` on the devices not lost,
  // or RESOURCE_EXHAUSTED (UNAVAILABLE when every device is lost).
  absl::StatusOr<std::vector<DevicePlan>> PlanDevices(const JobSpec& spec, ShardPlan* plan) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  // Whether a device other than `device` may run tasks of `job` (planned
  // there and not lost).
  bool CanRunElsewhere(const Job& job, size_t device) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  // Marks `device` lost and stops the jobs no other device can run.
  void MarkLost(size_t device, const absl::Status& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  void WorkerLoop(size_t device);
  bool PickTask(size_t device, Task* task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  // Takes `job`'s next task on `device`, or sets `short_of_memory` when the
  // device's budget is what kept it.
  bool TryTake(size_t device, const std::shared_ptr<Job>& job, Task* task, bool* short_of_memory)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  int64_t TaskBytes(const Job& job, int64_t index) const;
  // RESOURCE_EXHAUSTED when admitting a job of `flops` for `client` would
  // put it over a per-client quota.
  absl::Status CheckQuotas(const std::string& client, double flops) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  absl::Status RunTask(size_t device, const Task& task);
  void FinishTask(size_t device, Task& task, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  // Frees what an idle job holds on `device`, and retires a finished job.
  void Tidy(const std::shared_ptr<Job>& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  // Takes the job's state off `device`. Its destruction waits for
  // DestroyReleased, outside the lock: tearing down a GPU job synchronises
  // the GPU, which must not hold up every device's scheduling.
  void Release(const std::shared_ptr<Job>& job, size_t device)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  // Destroys the released states with `lock` unlocked, then (locked again)
  // uncommits their bytes and retires jobs that waited for them. Returns
  // whether there were any.
  bool DestroyReleased(std::unique_lock<std::mutex>& lock);
  std::chrono::steady_clock::time_point NextDeadline() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);

  const EngineOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::shared_ptr<WorkSignal> signal_;
  std::shared_ptr<PendingBytes> pending_;
  std::vector<std::shared_ptr<Job>> jobs_;  // guarded by signal_->mu
  std::vector<DeviceQueue> queues_;         // guarded by signal_->mu
  bool stopping_ = false;                   // guarded by signal_->mu
  std::atomic<int64_t> next_job_id_{1};
  // Device states released and not yet destroyed, with what they commit.
  struct Released {
    std::shared_ptr<Job> job;
    size_t device = 0;
    int64_t bytes = 0;
    std::unique_ptr<DeviceJob> state;
  };
  std::vector<Released> released_;  // guarded by signal_->mu
  std::vector<std::thread> workers_;
};

}  // namespace pricer
