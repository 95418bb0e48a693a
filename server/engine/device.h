// The interface every backend implements: a device with a memory budget that
// computes the shards of jobs. The engine gives each device one worker thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/engine/column_statistics.h"
#include "server/engine/job_spec.h"
#include "server/engine/memory_account.h"
#include "server/engine/shard_planner.h"

namespace pricer {

// What one shard gives back, for its kept columns [out_begin, out_end).
struct ShardOutput {
  std::vector<float> values;    // P x columns, column-major, when full output is on
  ColumnStatistics statistics;  // when statistics are on
};

// A job's state resident on one device (its terminal prices ST and whatever
// the backend keeps per job). Destroying it returns the memory to the budget.
class DeviceJob {
 public:
  virtual ~DeviceJob() = default;

  virtual absl::Status RunShard(const Shard& shard, ShardOutput* out) = 0;
  // Copies ST columns [issuer_begin, issuer_end) (P rows each) to `out`.
  virtual absl::Status CopyTerminalPrices(int64_t issuer_begin, int64_t issuer_end, float* out) = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  const std::string& name() const { return name_; }
  virtual std::string kind() const = 0;
  MemoryAccount& memory() { return memory_; }
  const MemoryAccount& memory() const { return memory_; }

  // Bytes a job holds on this device while one shard of `shard_columns`
  // columns runs: the resident state plus one shard's buffers.
  virtual int64_t JobBytes(const JobSpec& spec, int64_t shard_columns) const = 0;
  // Builds the job's resident state (ST). `spec` outlives the DeviceJob.
  virtual absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec) = 0;

 protected:
  Device(std::string name, int64_t budget_bytes) : name_(std::move(name)), memory_(budget_bytes) {}

 private:
  const std::string name_;
  MemoryAccount memory_;
};

}  // namespace pricer
