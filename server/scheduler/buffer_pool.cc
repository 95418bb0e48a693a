#include "server/scheduler/buffer_pool.h"

#include <utility>

namespace pricer {

std::vector<float> BufferPool::Take(size_t floats) {
  absl::MutexLock lock(&mu_);
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->capacity() >= floats && (best == free_.end() || it->capacity() < best->capacity())) {
      best = it;
    }
  }
  if (best == free_.end()) return {};
  std::vector<float> values = std::move(*best);
  free_.erase(best);
  return values;
}

std::shared_ptr<const std::vector<float>> BufferPool::Share(std::vector<float> values) {
  std::shared_ptr<BufferPool> self = shared_from_this();
  return std::shared_ptr<const std::vector<float>>(
      new std::vector<float>(std::move(values)), [self](const std::vector<float>* shared) {
        std::unique_ptr<std::vector<float>> owned(const_cast<std::vector<float>*>(shared));
        self->Give(std::move(*owned));
      });
}

size_t BufferPool::free_buffers() const {
  absl::MutexLock lock(&mu_);
  return free_.size();
}

void BufferPool::Give(std::vector<float> values) {
  if (values.capacity() == 0) return;
  absl::MutexLock lock(&mu_);
  if (free_.size() < kMaxFree) free_.push_back(std::move(values));
}

}  // namespace pricer
