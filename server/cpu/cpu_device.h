// The cpu backend: terminal prices on the host, shard GEMMs through OpenBLAS
// cblas_sgemm, statistics while each column block is in cache.
//
// OpenBLAS runs single-threaded here; the device parallelises itself, one
// 256-column block (kColumnAlignment) per task on its own OpenMP team. Each
// block is one sgemm call of a fixed shape, which makes every result column
// independent of how the work is split, and lets K logical cpu devices share
// the cores without OpenBLAS's global thread pool serialising them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/engine/device.h"

namespace pricer {

class CpuDevice : public Device {
 public:
  // `budget_bytes` bounds the host memory this device's jobs hold (ST, the
  // A block and the SC block of a running shard); `threads` (>= 1) is the
  // size of its team.
  CpuDevice(std::string name, int64_t budget_bytes, int threads);

  std::string kind() const override { return "cpu"; }
  int threads() const { return threads_; }
  // ST (P x N) + an A block (N x w) + an SC block (P x w), float32.
  int64_t JobBytes(const JobSpec& spec, int64_t shard_columns) const override;
  absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec) override;

 private:
  const int threads_;
};

// Physical memory of the host, bytes (the default cpu budget takes half).
int64_t HostMemoryBytes();

}  // namespace pricer
