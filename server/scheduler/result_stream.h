// The bounded queue of finished chunks between a job's shards (producers, on
// engine threads) and the one reader that sends them (the gRPC reactor).
//
// Producers reserve the bytes of a shard's output before they compute it, so
// the host memory a job holds for unsent chunks never exceeds the bound, and a
// slow reader holds back only its own job's shards.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/model/statistics.h"
#include "server/scheduler/buffer_pool.h"

namespace pricer {

// Floats shared by the chunks cut from one shard's output: each chunk is a
// range of the same buffer, so cutting copies nothing, and a reply sends the
// range straight from it while it holds the buffer (reply_encoding.h). The
// buffer is whatever `owner` keeps alive: a shard's output vector, or memory
// a backend owns (the cuda backend's pinned output blocks, which the GPU
// wrote straight into).
class SharedFloats {
 public:
  SharedFloats() = default;
  // All of `values`.
  explicit SharedFloats(std::vector<float> values);
  // All of `buffer`, and floats [offset, offset + count) of it.
  explicit SharedFloats(std::shared_ptr<const std::vector<float>> buffer);
  SharedFloats(std::shared_ptr<const std::vector<float>> buffer, size_t offset, size_t count);
  // `count` floats at `data`, which live as long as `owner`.
  SharedFloats(std::shared_ptr<const void> owner, const float* data, size_t count)
      : owner_(std::move(owner)), data_(data), size_(count) {}

  // Floats [offset, offset + count) of these, sharing their owner.
  SharedFloats Range(size_t offset, size_t count) const {
    return SharedFloats(owner_, data_ + offset, count);
  }

  const float* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

 private:
  std::shared_ptr<const void> owner_;
  const float* data_ = nullptr;
  size_t size_ = 0;
};

// A chunk's contributions and sensitivities: ColumnStatistics' float32
// blocks (the same names and layout: per contributed level, rows x columns,
// column-major), as ranges of its shard's arrays, not copies; a reply sends
// each from where it lies, as it sends a chunk's values.
struct ContributionBlocks {
  int64_t contribution_rows = 0;  // A's rows
  int64_t sensitivity_rows = 0;   // the issuers
  std::vector<SharedFloats> contributions, contributions_se, delta, delta_se, vega, vega_se;

  // Takes the blocks of `statistics` (a shard's output; moved, not copied),
  // leaving it without them; each array goes back to `pool`, when given,
  // once the last chunk that holds a range of it has been sent.
  static ContributionBlocks Take(ColumnStatistics* statistics, BufferPool* pool = nullptr);
  // Columns [first, first + count) of these.
  ContributionBlocks Range(int64_t first, int64_t count) const;
  int64_t bytes() const;
  bool empty() const { return contributions.empty(); }
};

struct ResultChunk {
  // kRoundStarted: a round of a targeted request (targeted_run.h) starts; it
  // prices `round_columns` columns with `rows` paths, computing [begin, end).
  enum class Kind { kScenarioColumns, kTerminalPrices, kInstrumentValues, kRoundStarted };
  Kind kind = Kind::kScenarioColumns;
  // Scenario columns or issuers [begin, end); `rows` (= P) values each.
  int64_t begin = 0;
  int64_t end = 0;
  int64_t rows = 0;
  int64_t round = 0;
  int64_t round_columns = 0;
  SharedFloats values;          // column-major, empty when not requested
  ColumnStatistics statistics;  // empty when not requested; its blocks are in `contributions`
  ContributionBlocks contributions;

  int64_t payload_bytes() const;
};

// The bytes all jobs' streams hold unsent, against one server-wide bound.
class PendingBytes {
 public:
  explicit PendingBytes(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // Counts `bytes`; fails when the bound would be exceeded, unless nothing
  // is pending at all (so one oversized shard can still run).
  bool TryAdd(int64_t bytes);
  // Whether TryAdd(bytes) would succeed now (adds nothing).
  bool HasRoom(int64_t bytes) const;
  void Remove(int64_t bytes);
  int64_t used() const;
  int64_t max_bytes() const { return max_bytes_; }

 private:
  const int64_t max_bytes_;
  mutable absl::Mutex mu_;
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
};

class ResultStream {
 public:
  // `on_space` runs (without the stream's lock) when sent chunks free room.
  // `shared`, when given, is a bound over several streams as well.
  ResultStream(int64_t max_pending_bytes, std::function<void()> on_space,
               std::shared_ptr<PendingBytes> shared = nullptr);
  // Gives back to the shared bound what is still pending (chunks a reader
  // that went away never sent).
  ~ResultStream();

  // Producer side. Reserves room for `bytes` of chunks; fails when the
  // stream's pending bytes would exceed its bound, unless nothing is pending,
  // or when the shared bound refuses them.
  bool TryReserve(int64_t bytes);
  // Whether TryReserve(bytes) would succeed now (reserves nothing).
  bool HasRoom(int64_t bytes) const;
  // Returns reserved bytes that will not be pushed (a failed shard).
  void Unreserve(int64_t bytes);
  // Queues a chunk whose bytes were reserved. Dropped once closed.
  void Push(ResultChunk chunk);
  // No more chunks; `status` is the job's outcome. Later calls are ignored.
  void Close(absl::Status status);

  // The job's inputs are ready (after its preparation, if it has one):
  // the reader may announce it. Chunks come only after it.
  void MarkReady();

  // Reader side. The listener runs (on a producer's thread) after each push,
  // on MarkReady and on close. DetachListener waits for a running listener
  // to return.
  void SetListener(std::function<void()> listener);
  void DetachListener();
  std::optional<ResultChunk> Pop();
  // The reader has sent a popped chunk of `bytes` payload bytes.
  void Release(int64_t bytes);
  // True once closed and every chunk popped; sets `status` to the outcome.
  bool Drained(absl::Status* status) const;
  bool closed() const;
  bool ready() const;

  int64_t pending_bytes() const;

 private:
  // Runs the listener, with the lock released while it runs.
  void Notify() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Drops `bytes` from the stream's and the shared count.
  void Forget(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t max_pending_bytes_;
  const std::function<void()> on_space_;
  const std::shared_ptr<PendingBytes> shared_;
  mutable absl::Mutex mu_;
  absl::CondVar listener_idle_;
  std::deque<ResultChunk> chunks_ ABSL_GUARDED_BY(mu_);
  int64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // reserved, queued or being sent
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::function<void()> listener_ ABSL_GUARDED_BY(mu_);
  int listeners_running_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace pricer
