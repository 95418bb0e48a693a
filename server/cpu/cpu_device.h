// The cpu backend: terminal prices on the host, shard GEMMs through OpenBLAS
// cblas_sgemm, statistics while each column is in cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/engine/device.h"

namespace pricer {

class CpuDevice : public Device {
 public:
  // `budget_bytes` bounds the host memory this device's jobs hold (ST, the
  // A block and the SC block of a running shard).
  CpuDevice(std::string name, int64_t budget_bytes);

  std::string kind() const override { return "cpu"; }
  absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec) override;
};

// Physical memory of the host, bytes (the default cpu budget takes half).
int64_t HostMemoryBytes();

}  // namespace pricer
