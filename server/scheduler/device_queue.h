// One device's queue of admitted jobs, the order its workers take them in,
// and its counters. The engine keeps one per device, under its lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/scheduler/job.h"

namespace pricer {

// One shard as the engine ran it, for checking the schedule.
struct ShardInterval {
  std::string job_id;
  int64_t shard = 0;
  std::chrono::steady_clock::time_point start;
  std::chrono::steady_clock::time_point end;
};

class DeviceQueue {
 public:
  const std::vector<std::shared_ptr<Job>>& jobs() const { return jobs_; }
  void Add(std::shared_ptr<Job> job) { jobs_.push_back(std::move(job)); }
  // Takes `job` off the queue; a client with no job left here starts afresh
  // when it comes back.
  void Remove(const std::shared_ptr<Job>& job);

  // The jobs in the order a worker tries them: higher priority first; within
  // a priority the client served longest ago, and within a client its job
  // served longest ago. So a client with 60 jobs queued takes one turn in two
  // against a client with one. `schedules[k]` is jobs()[k]'s.
  std::vector<size_t> PickOrder(size_t device,
                                const std::vector<const JobSchedule*>& schedules) const;
  // Records that `job` took a task here: it and its client go last.
  void MarkServed(const Job& job, JobSchedule& schedule, size_t device);

  // Memory committed here for admitted work (resident states, buffer sets).
  int64_t committed_bytes = 0;
  // Why the device takes no more work (a DeviceLost failure); empty while usable.
  std::string lost;

  // Counters, for DeviceStatus.
  void TaskStarted(std::chrono::steady_clock::time_point now);
  void TaskEnded(std::chrono::steady_clock::time_point now);
  void ShardDone(ShardInterval interval, double flops);
  double BusySeconds(std::chrono::steady_clock::time_point now) const;
  int64_t shards_done() const { return shards_done_; }
  double flops() const { return flops_; }
  const std::deque<ShardInterval>& intervals() const { return intervals_; }
  int64_t shards_failed = 0;
  int64_t shards_retried = 0;

 private:
  std::vector<std::shared_ptr<Job>> jobs_;
  // Round robin by "served longest ago": a turn counts up each time a task
  // is taken here, and each client (JobSpec::client) with jobs here keeps
  // the turn it was last served at (0: not yet).
  uint64_t turn_ = 0;
  std::map<std::string, uint64_t> client_served_;
  int64_t running_ = 0;
  std::chrono::steady_clock::time_point busy_since_;
  double busy_seconds_ = 0;
  int64_t shards_done_ = 0;
  double flops_ = 0;
  std::deque<ShardInterval> intervals_;
};

}  // namespace pricer
