// The interface every backend implements: a device with a memory budget that
// computes the shards of jobs. The engine gives each device a few worker threads
// (its shard slots, --max-shards-in-flight).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/model/job_spec.h"
#include "server/model/statistics.h"
#include "server/scheduler/allocation_table.h"
#include "server/scheduler/memory_account.h"
#include "server/scheduler/result_stream.h"
#include "server/scheduler/shard_planner.h"

namespace pricer {

// A failure after which a device can take no more work: its GPU or driver is
// gone, or its CUDA context is broken by a fault. The engine stops planning
// on that device ("lost") and retries its shards elsewhere. `cause` keeps its
// code and message; a payload marks it.
absl::Status DeviceLost(absl::Status cause);
bool IsDeviceLost(const absl::Status& status);

// What one shard gives back, for its kept columns [out_begin, out_end).
struct ShardOutput {
  // P x columns, column-major, when full output is on. RunShard sizes it; it
  // may come in holding a used buffer's values (BufferPool), all overwritten.
  std::vector<float> values;
  // Or the same values in memory the backend owns, when it wrote them there
  // (the cuda backend's pinned blocks, which its GPU copies into): the
  // engine cuts the chunks from these instead, uncopied.
  SharedFloats owned_values;
  ColumnStatistics statistics;  // when statistics are on
  // Where RunShard's Resize of `statistics` takes the contributions' arrays
  // from (the job's pool, ColumnStatistics::Resize); unset: allocated.
  std::function<std::vector<float>(size_t floats)> contribution_buffers;
  // Thread-seconds spent in the GEMM and in the statistics (the cost split).
  double gemm_seconds = 0;
  double statistics_seconds = 0;
};

// A job's state resident on one device (its terminal prices ST and whatever
// the backend keeps per job). Destroying it returns the memory to the budget.
class DeviceJob {
 public:
  virtual ~DeviceJob() = default;

  // RunShard may be called from several threads at once (shards in flight).
  virtual absl::Status RunShard(const Shard& shard, ShardOutput* out) = 0;
  // Copies `columns` of ST or of a book's V (P rows each) to `out`.
  virtual absl::Status CopyPathColumns(const PathColumns& columns, float* out) = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  const std::string& name() const { return name_; }
  virtual std::string kind() const = 0;
  // What the device's GEMMs run, e.g. "OpenBLAS 0.3.21, Cooperlake kernels"
  // or "cuBLAS, NVIDIA H200 (sm_90)"; empty where the backend does not say.
  virtual std::string kernels() const { return ""; }
  // Device memory the process holds outside the budget, measured when the
  // device was made (a GPU's CUDA context and loaded modules); 0 where
  // every byte is in the budget.
  virtual int64_t headroom_bytes() const { return 0; }
  // Host memory the device keeps idle for its next shards and jobs, not in
  // memory().in_use() (the cpu's ST, A and SC blocks, a GPU's pinned blocks:
  // block_pool.h), bytes.
  virtual int64_t idle_block_bytes() const { return 0; }
  MemoryAccount& memory() { return memory_; }
  const MemoryAccount& memory() const { return memory_; }

  // The memory contract with the engine's planner: the buffers a DeviceJob
  // allocates for `spec` with shards `shard_columns` wide at most, from
  // which the backend allocates them. The engine admits work so that their
  // sums fit the budget, so a device allocation never fails for want of
  // budget.
  virtual AllocationTable Allocations(const JobSpec& spec, int64_t shard_columns) const = 0;
  int64_t ResidentBytes(const JobSpec& spec) const {
    return Allocations(spec, kColumnAlignment).resident_bytes();
  }
  int64_t ShardBytes(const JobSpec& spec, int64_t shard_columns) const {
    return Allocations(spec, shard_columns).shard_bytes();
  }
  // The SC block a shard of a statistics-only job aims at here: a GPU runs
  // wider shards faster (fewer launches, events and hand-offs; 6-12% on an
  // H200, docs/BENCHMARKS.md); the width never changes results
  // (docs/architecture.md).
  virtual int64_t StatisticsShardBytes() const { return kTargetShardBytes; }
  // The most shards of one job worth running here at once, whatever the
  // budget allows (the engine's --max-shards-in-flight caps it too).
  virtual int64_t MaxShardsInFlight() const = 0;
  // Builds the job's resident state (ST); its shards are `shard_columns`
  // wide at most. `spec` outlives the DeviceJob.
  virtual absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec,
                                                              int64_t shard_columns) = 0;

 protected:
  Device(std::string name, int64_t budget_bytes) : name_(std::move(name)), memory_(budget_bytes) {}

 private:
  const std::string name_;
  MemoryAccount memory_;
};

}  // namespace pricer
