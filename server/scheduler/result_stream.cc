#include "server/scheduler/result_stream.h"

#include <utility>

namespace pricer {

SharedFloats::SharedFloats(std::vector<float> values)
    : SharedFloats(std::make_shared<const std::vector<float>>(std::move(values))) {}

SharedFloats::SharedFloats(std::shared_ptr<const std::vector<float>> buffer)
    : SharedFloats(buffer, 0, buffer->size()) {}

SharedFloats::SharedFloats(std::shared_ptr<const std::vector<float>> buffer, size_t offset,
                           size_t count)
    : SharedFloats(std::shared_ptr<const void>(buffer), buffer->data() + offset, count) {}

ContributionBlocks ContributionBlocks::Take(ColumnStatistics* statistics, BufferPool* pool) {
  ContributionBlocks blocks;
  blocks.contribution_rows = statistics->contribution_rows;
  blocks.sensitivity_rows = statistics->sensitivity_rows;
  ForEachContributionBlock(
      blocks, *statistics,
      [&](std::vector<SharedFloats>& to, std::vector<std::vector<float>>& from, int64_t) {
        for (std::vector<float>& level : from) {
          to.emplace_back(pool != nullptr
                              ? pool->Share(std::move(level))
                              : std::make_shared<const std::vector<float>>(std::move(level)));
        }
        from.clear();
      });
  return blocks;
}

ContributionBlocks ContributionBlocks::Range(int64_t first, int64_t count) const {
  ContributionBlocks range;
  range.contribution_rows = contribution_rows;
  range.sensitivity_rows = sensitivity_rows;
  ForEachContributionBlock(
      range, *this,
      [&](std::vector<SharedFloats>& to, const std::vector<SharedFloats>& from, int64_t rows) {
        for (const SharedFloats& level : from) {
          to.push_back(
              level.Range(static_cast<size_t>(first * rows), static_cast<size_t>(count * rows)));
        }
      });
  return range;
}

int64_t ContributionBlocks::bytes() const {
  size_t floats = 0;
  ForEachContributionBlock(*this, *this, [&](const auto& levels, const auto&, int64_t) {
    for (const SharedFloats& level : levels) floats += level.size();
  });
  return static_cast<int64_t>(floats * sizeof(float));
}

int64_t ResultChunk::payload_bytes() const {
  return static_cast<int64_t>(values.size() * sizeof(float)) + statistics.bytes() +
         contributions.bytes();
}

namespace {

// The rule of both bounds: `bytes` more fit, or nothing is pending at all
// (so that one oversized shard can still run).
bool Fits(int64_t used, int64_t bytes, int64_t max_bytes) {
  return used == 0 || used + bytes <= max_bytes;
}

}  // namespace

bool PendingBytes::TryAdd(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (!Fits(used_, bytes, max_bytes_)) return false;
  used_ += bytes;
  return true;
}

bool PendingBytes::HasRoom(int64_t bytes) const {
  absl::MutexLock lock(&mu_);
  return Fits(used_, bytes, max_bytes_);
}

void PendingBytes::Remove(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  used_ -= bytes;
}

int64_t PendingBytes::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

ResultStream::ResultStream(int64_t max_pending_bytes, std::function<void()> on_space,
                           std::shared_ptr<PendingBytes> shared)
    : max_pending_bytes_(max_pending_bytes),
      on_space_(std::move(on_space)),
      shared_(std::move(shared)) {}

ResultStream::~ResultStream() {
  if (shared_ != nullptr) shared_->Remove(pending_bytes_);
}

bool ResultStream::TryReserve(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (!Fits(pending_bytes_, bytes, max_pending_bytes_)) return false;
  if (shared_ != nullptr && !shared_->TryAdd(bytes)) return false;
  pending_bytes_ += bytes;
  return true;
}

bool ResultStream::HasRoom(int64_t bytes) const {
  absl::MutexLock lock(&mu_);
  return Fits(pending_bytes_, bytes, max_pending_bytes_) &&
         (shared_ == nullptr || shared_->HasRoom(bytes));
}

void ResultStream::Forget(int64_t bytes) {
  pending_bytes_ -= bytes;
  if (shared_ != nullptr) shared_->Remove(bytes);
}

void ResultStream::Unreserve(int64_t bytes) { Release(bytes); }

void ResultStream::Push(ResultChunk chunk) {
  absl::MutexLock lock(&mu_);
  if (closed_) {
    Forget(chunk.payload_bytes());
    return;
  }
  chunks_.push_back(std::move(chunk));
  Notify();
}

void ResultStream::MarkReady() {
  absl::MutexLock lock(&mu_);
  if (ready_) return;
  ready_ = true;
  Notify();
}

bool ResultStream::ready() const {
  absl::MutexLock lock(&mu_);
  return ready_;
}

void ResultStream::Close(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  closed_ = true;
  status_ = std::move(status);
  if (!status_.ok()) {
    // A failed or cancelled job sends nothing more: drop what is queued.
    for (const ResultChunk& chunk : chunks_) Forget(chunk.payload_bytes());
    chunks_.clear();
  }
  Notify();
}

void ResultStream::Notify() {
  if (!listener_) return;
  std::function<void()> listener = listener_;
  ++listeners_running_;
  mu_.Unlock();
  listener();
  mu_.Lock();
  if (--listeners_running_ == 0) listener_idle_.SignalAll();
}

void ResultStream::SetListener(std::function<void()> listener) {
  absl::MutexLock lock(&mu_);
  listener_ = std::move(listener);
}

void ResultStream::DetachListener() {
  absl::MutexLock lock(&mu_);
  listener_ = nullptr;
  while (listeners_running_ != 0) listener_idle_.Wait(&mu_);
}

std::optional<ResultChunk> ResultStream::Pop() {
  absl::MutexLock lock(&mu_);
  if (chunks_.empty()) return std::nullopt;
  ResultChunk chunk = std::move(chunks_.front());
  chunks_.pop_front();
  return chunk;
}

void ResultStream::Release(int64_t bytes) {
  {
    absl::MutexLock lock(&mu_);
    Forget(bytes);
  }
  if (on_space_) on_space_();
}

bool ResultStream::Drained(absl::Status* status) const {
  absl::MutexLock lock(&mu_);
  if (!closed_ || !chunks_.empty()) return false;
  *status = status_;
  return true;
}

bool ResultStream::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

int64_t ResultStream::pending_bytes() const {
  absl::MutexLock lock(&mu_);
  return pending_bytes_;
}

}  // namespace pricer
