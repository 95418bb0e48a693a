// A fixed set of threads running queued work, with a bound on the queue: the
// service's place for work too slow for a gRPC thread and not the engine's
// (storing an uploaded scenario set: its check, SHA-256 and disk write).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace pricer {

class BoundedExecutor {
 public:
  // `threads` (>= 1) run the work; at most `max_queued` items wait for one.
  BoundedExecutor(int threads, int64_t max_queued);
  // Runs what is queued, then joins the threads.
  ~BoundedExecutor();

  BoundedExecutor(const BoundedExecutor&) = delete;
  BoundedExecutor& operator=(const BoundedExecutor&) = delete;

  // Queues `work`; false (and `work` not run) when the queue is full.
  bool TrySubmit(std::function<void()> work) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !queue_.empty();
  }

  const int64_t max_queued_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace pricer
