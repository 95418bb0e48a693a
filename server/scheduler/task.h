// A job's tasks: what a device worker takes from a job, one at a time.
#pragma once

#include <cstdint>

namespace pricer {

enum class TaskKind {
  kPrepare,         // JobSpec::prepare, before any other task of the job
  kTerminalPrices,  // copies one chunk of ST's issuers into the stream
  kShard,           // one column shard: its GEMM, statistics and chunks
};

// A task: its kind and its index among the tasks of that kind.
struct TaskRef {
  TaskKind kind = TaskKind::kShard;
  int64_t index = 0;
};

// A job's tasks in the order they are taken: its preparation (when it has
// one), its terminal-price chunks (when asked for), then its shards.
class TaskList {
 public:
  TaskList(bool prepare, int64_t price_chunks, int64_t shards)
      : prepare_(prepare ? 1 : 0), price_chunks_(price_chunks), shards_(shards) {}

  int64_t size() const { return prepare_ + price_chunks_ + shards_; }
  int64_t shards() const { return shards_; }

  // The task at `ordinal` (0 <= ordinal < size()).
  TaskRef At(int64_t ordinal) const {
    if (ordinal < prepare_) return {TaskKind::kPrepare, 0};
    ordinal -= prepare_;
    if (ordinal < price_chunks_) return {TaskKind::kTerminalPrices, ordinal};
    return {TaskKind::kShard, ordinal - price_chunks_};
  }

 private:
  const int64_t prepare_;
  const int64_t price_chunks_;
  const int64_t shards_;
};

}  // namespace pricer
