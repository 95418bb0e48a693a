// The engine: devices, their queues and workers, and the jobs they share.
//
// A job is cut into tasks (task.h: its preparation, terminal-price chunks,
// then column shards). Each
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
// Engine work never runs on the caller's (gRPC's) threads: Submit only plans
// and queues; a job's heavy preparation (JobSpec::prepare) is its first task.
// The pieces: shard_planner.h (plans), job.h (a job and its scheduling
// state), device_queue.h (a device's queue and pick order), device.h (the
// backends' interface).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/model/job_spec.h"
#include "server/scheduler/device.h"
#include "server/scheduler/device_queue.h"
#include "server/scheduler/job.h"
#include "server/scheduler/result_stream.h"
#include "server/scheduler/shard_planner.h"
#include "server/scheduler/task.h"

namespace pricer {

struct EngineOptions {
  // Bound on the chunk bytes one job holds unsent (reserved, queued or being
  // written). A shard bigger than this runs only when nothing is pending.
  int64_t max_pending_bytes_per_job = 256LL << 20;
  // Bound on the chunk bytes all jobs together hold unsent.
  int64_t max_pending_bytes = 1LL << 30;
  // The most one job may hold on a device (its resident state and the
  // shards it runs there at once): `max_job_bytes` when > 0, and
  // `max_job_fraction` of the device's budget when > 0; the device's budget
  // otherwise. A job that does not fit under it on any device is refused.
  int64_t max_job_bytes = 0;
  double max_job_fraction = 0;
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
  // The host's page-locked memory, from which the devices that stage
  // through it (cuda) allocate: the engine admits each shard's pinned
  // buffers (AllocationTable::pinned_per_shard) against its budget as it
  // admits device buffers against a device's, and reports it. Null: a
  // bound of 0 bytes, enough for backends that stage nothing (cpu).
  std::shared_ptr<MemoryAccount> pinned_memory;
};

struct DeviceStatus {
  std::string name;
  std::string kind;
  std::string kernels;  // Device::kernels
  int64_t memory_budget_bytes = 0;
  int64_t bytes_in_use = 0;
  int64_t peak_bytes = 0;
  // Device memory the process holds outside the budget (Device::headroom_bytes).
  int64_t headroom_bytes = 0;
  int64_t idle_block_bytes = 0;  // Device::idle_block_bytes
  int64_t shards_done = 0;
  int64_t shards_failed = 0;   // tasks that failed here (each retried elsewhere or fatal)
  int64_t shards_retried = 0;  // tasks run here after failing on another device
  double flops = 0;            // GEMM flops of the shards done here (2 P N per column)
  double busy_seconds = 0;     // time with at least one task running
  // Why the device takes no more work (a DeviceLost failure); empty while
  // it is usable.
  std::string lost;
};

struct EngineStatus {
  int64_t queued_jobs = 0;   // admitted, not finished
  int64_t waiting_jobs = 0;  // of which no task has started yet
  // How long the waiting jobs have waited so far, on average (0: none waits).
  double average_wait_seconds = 0;
  int64_t pending_bytes = 0;
  int64_t max_pending_bytes = 0;
  // The host's pinned memory (EngineOptions::pinned_memory): its bound, the
  // bytes allocated from it now and the most at once.
  int64_t pinned_budget_bytes = 0;
  int64_t pinned_bytes_in_use = 0;
  int64_t pinned_peak_bytes = 0;
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
  // What Submit would say of `spec`'s fit on the devices' budgets
  // (RESOURCE_EXHAUSTED, UNAVAILABLE), admitting nothing: the last round of
  // a targeted request is checked before its first is submitted.
  absl::Status CheckFits(const JobSpec& spec) const;
  // Stops every job with `why` (a drain that ran out of time); their ids.
  std::vector<std::string> StopAll(const absl::Status& why);

  std::vector<DeviceStatus> DeviceStatuses() const;
  EngineStatus Status() const;
  // The most recent shards each device ran (up to 4096 per device).
  std::vector<ShardInterval> ShardIntervals(size_t device) const;

 private:
  // A task a worker took: the job, the task, and what it reserved.
  struct Task {
    std::shared_ptr<Job> job;
    JobOnDevice* on = nullptr;  // what the job holds on the task's device
    int64_t ordinal = 0;
    TaskRef ref;
    int64_t bytes = 0;  // reserved in the job's stream
    bool is_retry = false;
    std::string first_failure;  // of a retry: the try that failed
    std::chrono::steady_clock::time_point start;
  };
  // A device state released and not yet destroyed, with what it commits
  // on its device and of the host's pinned memory.
  struct Released {
    std::shared_ptr<Job> job;
    size_t device = 0;
    int64_t bytes = 0;
    int64_t pinned_bytes = 0;
    std::unique_ptr<DeviceJob> state;
  };
  // What kept a worker from taking a task: its device's budget, the host's
  // pinned memory, or both.
  struct Shortage {
    bool device = false;
    bool pinned = false;
  };

  // Admission.
  std::vector<PlannerDevice> PlannerDevices() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The SC bytes a shard of `spec` aims at: the widest of the devices'
  // StatisticsShardBytes for a statistics-only job, else kTargetShardBytes
  // (full output streams each shard's SC through host memory).
  int64_t TargetShardBytes(const JobSpec& spec) const;
  // RESOURCE_EXHAUSTED when admitting a job of `flops` for `client` would
  // put it over a per-client quota or the queue over --max-queued-jobs.
  absl::Status CheckAdmission(const std::string& client, double flops) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pinned bytes of one shard of `spec` (at `plan`'s width) on each
  // device. A device where they exceed the pinned memory's budget takes
  // none of the job (its plan's shards_in_flight becomes 0);
  // RESOURCE_EXHAUSTED naming the bytes and --pinned-memory when that
  // leaves no device.
  absl::StatusOr<std::vector<int64_t>> FitPinned(const JobSpec& spec, const ShardPlan& plan,
                                                 std::vector<DevicePlan>* device_plans) const;

  // Taking tasks (workers, under the lock).
  void WorkerLoop(size_t device);
  bool PickTask(size_t device, Task* task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops `device`'s expired jobs, frees what idle jobs hold, retires finished ones.
  void ExpireAndTidy(size_t device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases what jobs waiting for their reader hold on `device` (only
  // those holding pinned buffers there when `pinned_only`); whether any did.
  bool ReleaseJobsWaitingForReaders(size_t device, bool pinned_only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `job`'s next task on `device`, or records in `shortage` the memory
  // that kept it.
  bool TryTake(size_t device, const std::shared_ptr<Job>& job, Task* task, Shortage* shortage)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a task taken from `job` on `device`: its memory (device and
  // pinned bytes), its counters.
  void Commit(size_t device, const std::shared_ptr<Job>& job, int64_t bytes, int64_t pinned_bytes,
              bool new_buffers, TaskKind kind) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t TaskBytes(const Job& job, TaskRef ref) const;
  std::chrono::steady_clock::time_point NextDeadline() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Running tasks (workers, without the lock).
  absl::Status RunTask(size_t device, const Task& task);
  absl::Status RunPrepare(Job& job);
  absl::Status RunTerminalPrices(Job& job, DeviceJob& state, int64_t index);
  absl::Status RunShard(Job& job, DeviceJob& state, int64_t index);

  // Finishing tasks (workers, under the lock).
  void FinishTask(size_t device, Task& task, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A failed task: retried on another device, or the end of the job.
  void HandleFailure(size_t device, Task& task, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a device other than `device` may run tasks of `job` (planned
  // there and not lost).
  bool CanRunElsewhere(const Job& job, size_t device) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `device` lost and stops the jobs no other device can run.
  void MarkLost(size_t device, const absl::Status& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Giving memory back (under the lock).
  // Frees what an idle job holds on `device`, and retires a finished job.
  void Tidy(const std::shared_ptr<Job>& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Retire(const std::shared_ptr<Job>& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the job's state off `device`. Its destruction waits for
  // DestroyReleased, outside the lock: tearing down a GPU job synchronises
  // the GPU, which must not hold up every device's scheduling.
  void Release(const std::shared_ptr<Job>& job, size_t device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Destroys the released states with the lock released, then (locked
  // again) uncommits their bytes and retires jobs that waited for them.
  // Returns whether there were any.
  bool DestroyReleased() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const EngineOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
  const std::shared_ptr<WorkSignal> signal_;
  absl::Mutex& mu_;  // signal_->mu: the engine's lock
  const std::shared_ptr<PendingBytes> pending_;
  const std::shared_ptr<MemoryAccount> pinned_;  // the host's pinned memory
  // Pinned bytes committed for admitted work, all devices together.
  int64_t pinned_committed_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::shared_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<DeviceQueue> queues_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Released> released_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> next_job_id_{1};
  std::vector<std::thread> workers_;
};

}  // namespace pricer
