#include "tests/scheduler/fake_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/scheduler/shard_planner.h"
#include "tests/time_scale.h"

namespace pricer {
namespace {

// Puts one job's chunks back together, checking each chunk's shape.
class Accumulator {
 public:
  explicit Accumulator(Job& job) : job_(job), spec_(job.spec()) {
    const size_t columns = static_cast<size_t>(spec_.column_end - spec_.column_begin);
    const size_t paths = static_cast<size_t>(spec_.paths);
    const size_t issuers = static_cast<size_t>(spec_.market.issuers());
    if (spec_.output.full) received_.sc.assign(columns * paths, NAN);
    if (spec_.output.statistics.any()) {
      received_.statistics.Resize(spec_.output.statistics, columns);
    }
    if (spec_.output.terminal_prices) received_.st.assign(issuers * paths, NAN);
    received_.column_seen.assign(columns, 0);
    received_.issuer_seen.assign(spec_.output.terminal_prices ? issuers : 0, 0);
  }

  // Pops what is queued; true once the stream is drained.
  bool Poll() {
    if (drained_) return true;
    while (std::optional<ResultChunk> chunk = job_.results().Pop()) {
      if (chunk->kind == ResultChunk::Kind::kTerminalPrices) {
        AddPrices(*chunk);
      } else {
        AddColumns(*chunk);
      }
      job_.results().Release(chunk->payload_bytes());
    }
    drained_ = job_.results().Drained(&received_.status);
    return drained_;
  }

  Received Take() { return std::move(received_); }

 private:
  void AddPrices(const ResultChunk& chunk) {
    const int64_t paths = spec_.paths;
    const bool fits =
        spec_.output.terminal_prices && chunk.begin >= 0 && chunk.begin < chunk.end &&
        chunk.end <= spec_.market.issuers() &&
        static_cast<int64_t>(chunk.values.size()) == paths * (chunk.end - chunk.begin);
    EXPECT_TRUE(fits) << "terminal prices [" << chunk.begin << ", " << chunk.end << ")";
    if (!fits) return;
    for (int64_t i = chunk.begin; i < chunk.end; ++i) ++received_.issuer_seen[i];
    std::copy(chunk.values.begin(), chunk.values.end(), received_.st.begin() + chunk.begin * paths);
  }

  void AddColumns(const ResultChunk& chunk) {
    const int64_t paths = spec_.paths;
    const int64_t width = chunk.end - chunk.begin;
    const StatisticsSelection& selection = spec_.output.statistics;
    const bool fits =
        chunk.rows == paths && chunk.begin >= spec_.column_begin && width > 0 &&
        chunk.end <= spec_.column_end &&
        static_cast<int64_t>(chunk.values.size()) == (spec_.output.full ? paths * width : 0) &&
        chunk.statistics.values() == width * selection.values_per_column();
    EXPECT_TRUE(fits) << "scenario columns [" << chunk.begin << ", " << chunk.end << ")";
    if (!fits) return;
    const int64_t offset = chunk.begin - spec_.column_begin;
    for (int64_t k = 0; k < width; ++k) ++received_.column_seen[offset + k];
    std::copy(chunk.values.begin(), chunk.values.end(), received_.sc.begin() + offset * paths);
    ColumnStatistics& to = received_.statistics;
    const ColumnStatistics& from = chunk.statistics;
    for (auto [t, f] : {std::pair{&to.v0, &from.v0}, std::pair{&to.mean, &from.mean},
                        std::pair{&to.stddev, &from.stddev}, std::pair{&to.min, &from.min},
                        std::pair{&to.max, &from.max}}) {
      std::copy(f->begin(), f->end(), t->begin() + offset);
    }
  }

  Job& job_;
  const JobSpec& spec_;
  Received received_;
  bool drained_ = false;
};

// Counts the values that differ from what was expected, remembering the first.
struct Mismatches {
  int64_t count = 0;
  std::string first;

  void Check(bool equal, const std::string& what) {
    if (equal) return;
    if (count++ == 0) first = what;
  }
};

}  // namespace

FakeEngine::~FakeEngine() {
  if (control == nullptr) return;
  control->Open();
  engine.reset();
  EXPECT_EQ(control->gate_timeouts(), 0) << "a shard waited at the fake's gate until it timed out";
}

EngineOptions OneShardSlot() {
  EngineOptions options;
  options.max_shards_in_flight = 1;
  return options;
}

FakeEngine MakeFakeEngine(const std::vector<int64_t>& budgets, EngineOptions options,
                          int64_t max_shards_in_flight) {
  FakeEngine fake;
  fake.control = std::make_shared<FakeDeviceControl>();
  std::vector<std::unique_ptr<Device>> devices;
  for (size_t d = 0; d < budgets.size(); ++d) {
    auto device = std::make_unique<FakeDevice>(absl::StrCat("fake", d), budgets[d], fake.control,
                                               max_shards_in_flight, options.pinned_memory);
    fake.devices.push_back(device.get());
    devices.push_back(std::move(device));
  }
  fake.engine = std::make_unique<Engine>(std::move(devices), options);
  return fake;
}

JobSpec FakeJob(const std::string& client, uint64_t seed, int64_t shards, int priority) {
  JobSpec spec;
  spec.market.spot.assign(kFakeIssuers, 100.0);
  spec.market.volatility.assign(kFakeIssuers, 0.2);
  spec.paths = kFakePaths;
  spec.seed = seed;
  spec.scenarios = ScenarioMatrix::Generated(kFakeIssuers, shards * kColumnAlignment, 1, 0, 1);
  spec.column_end = shards * kColumnAlignment;
  spec.output.full = true;
  spec.shard_columns = kColumnAlignment;
  spec.client = client;
  spec.priority = priority;
  return spec;
}

std::shared_ptr<Job> Submitted(Engine& engine, JobSpec spec) {
  absl::StatusOr<std::shared_ptr<Job>> job = engine.Submit(std::move(spec));
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *std::move(job) : nullptr;
}

std::vector<Received> CollectAll(const std::vector<std::shared_ptr<Job>>& jobs,
                                 std::chrono::seconds timeout) {
  std::vector<Accumulator> accumulators;
  for (const auto& job : jobs) accumulators.emplace_back(*job);
  const std::chrono::milliseconds limit = Scaled(timeout);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    bool all = true;
    for (Accumulator& a : accumulators) all = a.Poll() && all;
    if (all) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the jobs did not finish in " << limit.count() << " ms";
      for (const auto& job : jobs) job->Cancel(absl::DeadlineExceededError("test timeout"));
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::vector<Received> received;
  for (Accumulator& a : accumulators) received.push_back(a.Take());
  return received;
}

Received Collect(const std::shared_ptr<Job>& job) { return std::move(CollectAll({job})[0]); }

void ExpectExact(const Received& received, const JobSpec& spec) {
  ASSERT_TRUE(received.status.ok()) << received.status;
  const int64_t paths = spec.paths;
  const StatisticsSelection& selection = spec.output.statistics;
  const double n = static_cast<double>(paths);
  Mismatches bad;
  for (int64_t k = 0; k < spec.column_end - spec.column_begin; ++k) {
    const int64_t j = spec.column_begin + k;
    const std::string where = absl::StrCat("column ", j);
    bad.Check(received.column_seen[k] == 1,
              absl::StrCat(where, " sent ", received.column_seen[k], " times"));
    for (int64_t p = 0; spec.output.full && p < paths; ++p) {
      bad.Check(received.sc[k * paths + p] == FakeScenarioValue(spec.seed, p, j),
                absl::StrFormat("%s path %d: %.9g, not %.9g", where, p, received.sc[k * paths + p],
                                FakeScenarioValue(spec.seed, p, j)));
    }
    if (!selection.any()) continue;
    // SC[:, j] is base + 0, 1, ..., P - 1.
    const double base = FakeScenarioValue(spec.seed, 0, j);
    const ColumnStatistics& s = received.statistics;
    const double stddev = std::sqrt(n * (n + 1) / 12);
    bad.Check(s.v0[k] == FakeV0(spec.seed, j), absl::StrFormat("%s v0 %.17g", where, s.v0[k]));
    bad.Check(s.mean[k] == base + (n - 1) / 2, absl::StrFormat("%s mean %.17g", where, s.mean[k]));
    bad.Check(s.min[k] == base && s.max[k] == base + n - 1, absl::StrCat(where, " min/max"));
    bad.Check(std::abs(s.stddev[k] - stddev) <= 1e-15 * stddev,
              absl::StrFormat("%s stddev %.17g", where, s.stddev[k]));
  }
  for (int64_t i = 0; spec.output.terminal_prices && i < spec.market.issuers(); ++i) {
    bad.Check(received.issuer_seen[i] == 1,
              absl::StrCat("issuer ", i, " sent more or less than once"));
    for (int64_t p = 0; p < paths; ++p) {
      bad.Check(received.st[i * paths + p] == FakeTerminalPrice(spec.seed, p, i),
                absl::StrFormat("issuer %d path %d: %.9g, not %.9g", i, p,
                                received.st[i * paths + p], FakeTerminalPrice(spec.seed, p, i)));
    }
  }
  EXPECT_EQ(bad.count, 0) << "first: " << bad.first;
}

bool AwaitNoJobs(const Engine& engine) {
  const auto deadline = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(10));
  while (engine.Status().queued_jobs > 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

void ExpectNoBytesHeld(const Engine& engine) {
  for (const DeviceStatus& device : engine.DeviceStatuses()) {
    EXPECT_EQ(device.bytes_in_use, 0) << device.name;
    EXPECT_LE(device.peak_bytes, device.memory_budget_bytes) << device.name;
  }
}

size_t DeviceIndex(const std::string& name) {
  EXPECT_EQ(name.substr(0, 4), "fake");
  return static_cast<size_t>(std::stoul(name.substr(4)));
}

std::vector<FakeShardRun> RunsOf(const FakeDeviceControl& control, uint64_t seed, int64_t shard) {
  std::vector<FakeShardRun> runs;
  for (const FakeShardRun& run : control.runs()) {
    if (run.seed == seed && run.shard == shard) runs.push_back(run);
  }
  return runs;
}

std::vector<std::string> RunLabels(const FakeDeviceControl& control, const std::string& device) {
  std::vector<std::string> labels;
  for (const FakeShardRun& run : control.runs()) {
    if (device.empty() || run.device == device)
      labels.push_back(absl::StrCat(run.seed, ".", run.shard));
  }
  return labels;
}

}  // namespace pricer
