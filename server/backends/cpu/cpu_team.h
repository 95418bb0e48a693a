// How the cpu backend's tasks share its cores: a team per task, and a stop
// that the team's threads poll.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/backends/cpu/cpu_device.h"
#include "server/model/job_spec.h"

namespace pricer {

// Runs `body(team)` with a team sized for the tasks now running on `device`,
// at most `useful` threads: a tiny job runs on the calling worker alone,
// since waking a team costs more than it saves.
template <typename Body>
void WithTeam(CpuDevice& device, int64_t useful, Body body) {
  const int team = device.BeginTask();
  body(static_cast<int>(std::clamp<int64_t>(useful, 1, team)));
  device.EndTask();
}

// Polls StopStatus from the threads of a team, once per block: once one of
// them sees a reason to stop, the others skip their remaining blocks.
class StopPoll {
 public:
  explicit StopPoll(const JobSpec& spec) : spec_(spec) {}

  bool Stopped() {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    absl::Status why = StopStatus(spec_);
    if (why.ok()) return false;
    absl::MutexLock lock(&mu_);
    if (status_.ok()) status_ = std::move(why);
    stopped_ = true;
    return true;
  }
  absl::Status status() const {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  const JobSpec& spec_;
  std::atomic<bool> stopped_{false};
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pricer
