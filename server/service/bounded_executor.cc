#include "server/service/bounded_executor.h"

#include <algorithm>
#include <utility>

namespace pricer {

BoundedExecutor::BoundedExecutor(int threads, int64_t max_queued) : max_queued_(max_queued) {
  for (int t = 0; t < std::max(1, threads); ++t) threads_.emplace_back([this] { Loop(); });
}

BoundedExecutor::~BoundedExecutor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

bool BoundedExecutor::TrySubmit(std::function<void()> work) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || static_cast<int64_t>(queue_.size()) >= max_queued_) return false;
  queue_.push_back(std::move(work));
  return true;
}

void BoundedExecutor::Loop() {
  while (true) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&mu_, absl::Condition(this, &BoundedExecutor::HasWorkOrStopping));
      if (queue_.empty()) return;  // stopping, and nothing left
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace pricer
