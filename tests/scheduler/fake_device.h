// A deterministic stand-in for a backend, for the scheduler's tests: no BLAS,
// results given by closed forms (exact in float32), memory allocated exactly
// as its contract with the engine says, and the timing and faults of its
// shards set by the test through a FakeDeviceControl shared by the devices.
//
//   auto control = std::make_shared<FakeDeviceControl>();
//   devices.push_back(std::make_unique<FakeDevice>("fake0", budget, control));
//   control->Hold();                      // shards wait in RunShard
//   control->FailShard(seed, 2, DeviceLost(absl::InternalError("gone")));
//   ... submit jobs; control->AwaitArrivals(1); control->Open();
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "server/scheduler/device.h"

namespace pricer {

// The closed forms stay exact in float32 within these bounds (StartJob
// refuses a job outside them): seed < 32, P <= 16, N and M <= 32768.
inline constexpr uint64_t kFakeSeeds = 32;
inline constexpr int64_t kFakeMaxPaths = 16;
inline constexpr int64_t kFakeMaxColumns = 32768;

// SC[p, j] and ST[p, i] of the job with `seed`: distinct integers per job,
// path and column (ST negative), and the V0 the fake reports for column j.
float FakeScenarioValue(uint64_t seed, int64_t p, int64_t j);
float FakeTerminalPrice(uint64_t seed, int64_t p, int64_t i);
double FakeV0(uint64_t seed, int64_t j);

// One RunShard call, in the order the calls reached the gate.
struct FakeShardRun {
  std::string device;
  std::string client;
  uint64_t seed = 0;
  int64_t shard = 0;
  bool failed = false;  // an injected fault ended it
};

// One StartJob call.
struct FakeJobStart {
  std::string device;
  uint64_t seed = 0;
  int64_t bytes_in_use = 0;  // on the device, just before the job allocated
};

// What the test sets and sees, shared by the fake devices of one engine.
class FakeDeviceControl {
 public:
  // A shard that waits at the gate longer than this (times TimeScale())
  // passes anyway (counted in gate_timeouts), so a failing test cannot hang
  // the engine's shutdown.
  static constexpr std::chrono::seconds kGateTimeout{10};

  // The gate in RunShard (open at first): Hold stops the shards that arrive,
  // Allow lets `shards` more of them pass (only those on `device`, when
  // named), Open lets every shard pass.
  void Hold();
  void Allow(int64_t shards, const std::string& device = "");
  void Open();
  // Waits (up to kGateTimeout, scaled) until `count` RunShard calls in all have
  // reached the gate, their shard memory allocated; false on timeout.
  bool AwaitArrivals(int64_t count);

  // The next `times` runs of shard `shard` of the job with `seed` to pass
  // the gate, on any device, fail with `fault` (after allocating their
  // memory). A shard held at the gate may still be given a fault.
  void FailShard(uint64_t seed, int64_t shard, absl::Status fault, int times = 1);

  std::vector<FakeShardRun> runs() const;
  std::vector<FakeJobStart> starts() const;
  // The most shards that were in RunShard on `device` at once.
  int64_t max_running(const std::string& device) const;
  int64_t gate_timeouts() const;

  // Called by the fake's jobs.
  void RecordStart(const std::string& device, uint64_t seed, int64_t bytes_in_use);
  // Logs the run, waits at the gate, and returns the fault injected for it
  // then (OK for none). Each EnterShard is followed by a LeaveShard.
  absl::Status EnterShard(const std::string& device, const JobSpec& spec, int64_t shard);
  void LeaveShard(const std::string& device);

 private:
  struct Running {
    int64_t now = 0;
    int64_t most = 0;
  };

  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  int64_t permits_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> device_permits_ ABSL_GUARDED_BY(mu_);
  int64_t arrivals_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t gate_timeouts_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::pair<uint64_t, int64_t>, std::deque<absl::Status>> faults_ ABSL_GUARDED_BY(mu_);
  std::vector<FakeShardRun> runs_ ABSL_GUARDED_BY(mu_);
  std::vector<FakeJobStart> starts_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Running> running_ ABSL_GUARDED_BY(mu_);
};

class FakeDevice : public Device {
 public:
  // With `pinned_memory`, each shard also stages its SC block through it,
  // as a cuda device through the host's pinned memory.
  FakeDevice(std::string name, int64_t budget_bytes, std::shared_ptr<FakeDeviceControl> control,
             int64_t max_shards_in_flight = 4,
             std::shared_ptr<MemoryAccount> pinned_memory = nullptr);

  std::string kind() const override { return "fake"; }
  // Resident, ST: 4 P N bytes; per shard, an A block and an SC block in one
  // buffer, as the cpu device: 4 (N + P) w bytes; pinned per shard, with
  // pinned memory, the SC block again: 4 P w bytes.
  AllocationTable Allocations(const JobSpec& spec, int64_t shard_columns) const override;
  int64_t MaxShardsInFlight() const override { return max_shards_in_flight_; }
  absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec,
                                                      int64_t shard_columns) override;

  FakeDeviceControl& control() { return *control_; }
  MemoryAccount* pinned_memory() { return pinned_memory_.get(); }

 private:
  const std::shared_ptr<FakeDeviceControl> control_;
  const int64_t max_shards_in_flight_;
  const std::shared_ptr<MemoryAccount> pinned_memory_;
};

}  // namespace pricer
