// The engine: devices, one worker thread each, and the jobs they share.
//
// A job is cut into tasks (terminal-price chunks, then column shards). Each
// device's worker takes the next task of the next job in round-robin order
// whose result stream has room, runs it on its device and queues the chunks.
// Engine work never runs on the caller's (gRPC's) threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "server/engine/device.h"
#include "server/engine/job_spec.h"
#include "server/engine/result_stream.h"
#include "server/engine/shard_planner.h"

namespace pricer {

struct EngineOptions {
  // Bound on the chunk bytes one job holds unsent (reserved, queued or being
  // written). A shard bigger than this runs only when nothing is pending.
  int64_t max_pending_bytes_per_job = 256LL << 20;
};

struct DeviceStatus {
  std::string name;
  std::string kind;
  int64_t memory_budget_bytes = 0;
  int64_t bytes_in_use = 0;
  int64_t peak_bytes = 0;
  int64_t shards_done = 0;
};

struct JobSummary {
  double elapsed_seconds = 0;
  double flops = 0;   // 2 * P * N * priced columns
  int64_t bytes = 0;  // payload bytes of the chunks produced
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
  ResultStream& results() { return results_; }

  // Stops the job: pending tasks are dropped, running ones end at their shard
  // boundary, the stream closes with `why`, and its device memory is freed.
  void Cancel(absl::Status why);
  JobSummary Summary() const;

  // Constructed by Engine::Submit only.
  Job(std::string id, JobSpec spec, ShardPlan plan, int64_t device_count, int64_t max_pending_bytes,
      std::shared_ptr<WorkSignal> signal);

 private:
  friend class Engine;

  int64_t task_count() const { return prices_chunks_ + plan_.shard_count; }

  const std::string id_;
  const JobSpec spec_;
  const ShardPlan plan_;
  const int64_t prices_chunks_;
  const std::shared_ptr<WorkSignal> signal_;
  const std::chrono::steady_clock::time_point start_;
  ResultStream results_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> bytes_{0};
  std::atomic<double> elapsed_seconds_{-1};

  // Guarded by signal_->mu (the engine's lock).
  int64_t next_task_ = 0;
  int64_t running_ = 0;
  // Each slot is touched only by its device's worker while running_ > 0.
  std::vector<std::unique_ptr<DeviceJob>> device_jobs_;
};

class Engine {
 public:
  explicit Engine(std::vector<std::unique_ptr<Device>> devices, EngineOptions options = {});
  ~Engine();  // cancels the jobs still running (UNAVAILABLE) and joins the workers

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Plans and queues a validated job; its chunks arrive on job->results().
  absl::StatusOr<std::shared_ptr<Job>> Submit(JobSpec spec);
  std::vector<DeviceStatus> DeviceStatuses() const;
  std::vector<std::string> DeviceNames() const;

 private:
  struct Task {
    std::shared_ptr<Job> job;
    int64_t index = 0;
    int64_t bytes = 0;
  };

  // Narrows the plan's shards until the job fits some device's budget, or
  // RESOURCE_EXHAUSTED naming the bytes needed and the largest budget.
  absl::StatusOr<ShardPlan> FitToBudgets(const JobSpec& spec, ShardPlan plan) const;
  void WorkerLoop(size_t device_index);
  // Picks the next runnable task in round-robin order; retires finished jobs.
  bool PickTask(Task* task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);
  int64_t TaskBytes(const Job& job, int64_t index) const;
  absl::Status RunTask(size_t device_index, const Task& task);
  void RetireIfDone(const std::shared_ptr<Job>& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu);

  const EngineOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::shared_ptr<WorkSignal> signal_;
  std::vector<std::shared_ptr<Job>> jobs_;  // guarded by signal_->mu
  size_t round_robin_ = 0;                  // guarded by signal_->mu
  bool stopping_ = false;                   // guarded by signal_->mu
  std::unique_ptr<std::atomic<int64_t>[]> shards_done_;
  std::atomic<int64_t> next_job_id_{1};
  std::vector<std::thread> workers_;
};

}  // namespace pricer
