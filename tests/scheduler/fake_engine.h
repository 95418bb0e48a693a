// An engine of fake devices (fake_device.h) for the scheduler's tests, and
// the reader side: pop a job's chunks as the gRPC reactor does and check
// them against the fake's closed forms.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/model/job_spec.h"
#include "server/model/statistics.h"
#include "server/scheduler/engine.h"
#include "server/scheduler/shard_planner.h"
#include "tests/scheduler/fake_device.h"

namespace pricer {

// Paths and issuers of FakeJob, and what it costs on a fake device: ST,
// and the A and SC blocks of one 256-column shard.
inline constexpr int64_t kFakePaths = 4;
inline constexpr int64_t kFakeIssuers = 2;
inline constexpr int64_t kFakeResidentBytes = 4 * kFakePaths * kFakeIssuers;
inline constexpr int64_t kFakeShardBytes = 4 * (kFakePaths + kFakeIssuers) * kColumnAlignment;
// What one such shard stages through pinned memory, when the devices do.
inline constexpr int64_t kFakePinnedShardBytes = 4 * kFakePaths * kColumnAlignment;
// A budget no FakeJob comes near.
inline constexpr int64_t kFakeLargeBudget = int64_t{1} << 30;

// Devices fake0, fake1, ... sharing one control; the engine owns them.
struct FakeEngine {
  std::shared_ptr<FakeDeviceControl> control;
  std::vector<FakeDevice*> devices;
  std::unique_ptr<Engine> engine;

  FakeEngine() = default;
  FakeEngine(FakeEngine&&) = default;
  // Opens the gate first, so that held shards let the workers join.
  ~FakeEngine();
};

// One worker per device, so that each runs one shard at a time.
EngineOptions OneShardSlot();

// One budget per device; each gets `max_shards_in_flight` for its own limit,
// and stages through options.pinned_memory when it is set.
FakeEngine MakeFakeEngine(const std::vector<int64_t>& budgets, EngineOptions options = {},
                          int64_t max_shards_in_flight = 4);

// A job of `shards` one-block (256-column) shards, P = 4, N = 2: full output
// and the basic statistics, no terminal prices.
JobSpec FakeJob(const std::string& client, uint64_t seed, int64_t shards, int priority = 0);

// Submits `spec`, expecting it admitted; null (and a test failure) if not.
std::shared_ptr<Job> Submitted(Engine& engine, JobSpec spec);

// Everything one job sent, put back together.
struct Received {
  absl::Status status = absl::UnknownError("not drained");
  std::vector<float> sc;         // P x columns, column-major (full output)
  ColumnStatistics statistics;   // basic statistics of the columns, by offset
  std::vector<float> st;         // P x N, column-major (terminal prices)
  std::vector<int> column_seen;  // chunks that held each column
  std::vector<int> issuer_seen;  // chunks that held each issuer
};

// Pops the chunks of every job (releasing each as the reactor does) until
// all are drained, or fails the test after `timeout` (times TimeScale()) and
// cancels them.
std::vector<Received> CollectAll(const std::vector<std::shared_ptr<Job>>& jobs,
                                 std::chrono::seconds timeout = std::chrono::seconds(10));
Received Collect(const std::shared_ptr<Job>& job);

// Expects an OK status, each column and issuer sent once, and every value
// exactly what the fake computes for `spec`.
void ExpectExact(const Received& received, const JobSpec& spec);

// Waits (up to 10 s, times TimeScale()) until the engine holds no job: each
// one retired, its device memory returned.
bool AwaitNoJobs(const Engine& engine);

// Expects no device to hold memory now, nor to have passed its budget.
void ExpectNoBytesHeld(const Engine& engine);

// The index of fake device `name` ("fake1": 1).
size_t DeviceIndex(const std::string& name);

// The runs of shard `shard` of the job with `seed`, in order.
std::vector<FakeShardRun> RunsOf(const FakeDeviceControl& control, uint64_t seed, int64_t shard);

// "seed.shard" of each shard run (on `device`, or on any when empty), in the
// order they reached the fake's gate.
std::vector<std::string> RunLabels(const FakeDeviceControl& control,
                                   const std::string& device = "");

}  // namespace pricer
