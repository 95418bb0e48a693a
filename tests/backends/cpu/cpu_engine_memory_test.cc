// Device memory of the engine with the real cpu backend: it returns to zero
// and the peak fits the budget, the blocks a job leaves serve the next one
// without ever taking a budget it needs, deadlines and cancellation stop a
// job and free its memory, a job over every budget is refused before any
// work, and shards narrow to fit a small budget with the same result.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/scheduler/engine.h"
#include "server/scheduler/shard_planner.h"
#include "tests/backends/cpu/cpu_engine_test_util.h"
#include "tests/backends/cpu/engine_test_util.h"
#include "tests/time_scale.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

TEST(CpuEngineTest, DeviceMemoryReturnsToZeroAndThePeakFitsTheBudget) {
  auto engine = MakeEngine();
  const JobResult result = RunJob(*engine, ReproducibilitySpec(192, 0));
  ASSERT_TRUE(result.status.ok()) << result.status;
  const DeviceStatus status = engine->DeviceStatuses()[0];
  EXPECT_EQ(status.name, "cpu0");
  EXPECT_EQ(status.kind, "cpu");
  EXPECT_EQ(status.bytes_in_use, 0);
  // At least ST and the SC block of one shard were resident at once.
  const int64_t st_bytes = kPaths * kIssuers * 4;
  EXPECT_GE(status.peak_bytes, st_bytes + kPaths * std::min(kColumnAlignment, kColumns) * 4);
  EXPECT_LE(status.peak_bytes, status.memory_budget_bytes);
  EXPECT_EQ(status.memory_budget_bytes, kBudget);
  EXPECT_GT(status.shards_done, 0);
}

// Statistics only: a shard of a full output whose columns are all kept
// multiplies into the output, not into an SC block of its own.
JobSpec StatisticsSpec(int64_t shard_columns, int64_t issuers = kIssuers) {
  return MakeSpec(SpreadMarket(issuers), kPaths, kSeed,
                  ScenarioMatrix::Generated(issuers, kColumns, kScenarioSeed, 0.0f, 1.0f),
                  Output(false, true, false), shard_columns);
}

TEST(CpuEngineTest, TheBlocksAJobLeavesServeTheNextWithTheSameResults) {
  auto engine = MakeEngine();
  const JobSpec spec = StatisticsSpec(2 * kColumnAlignment);
  const JobResult first = RunJob(*engine, spec);
  ASSERT_TRUE(first.status.ok()) << first.status;
  const DeviceStatus after_first = engine->DeviceStatuses()[0];
  EXPECT_EQ(after_first.bytes_in_use, 0);
  // ST and, for each of the two shards that ran at once, an A and an SC block.
  const int64_t st = kPaths * kIssuers * 4;
  const int64_t shard = (kIssuers + kPaths) * 2 * kColumnAlignment * 4;
  EXPECT_EQ(after_first.idle_block_bytes, st + 2 * shard);
  // The second job runs in the first one's blocks, which still hold its values.
  const JobResult second = RunJob(*engine, spec);
  ASSERT_TRUE(second.status.ok()) << second.status;
  ASSERT_EQ(second.statistics.mean.size(), static_cast<size_t>(kColumns));
  EXPECT_EQ(second.statistics.mean, first.statistics.mean);
  EXPECT_EQ(second.statistics.stddev, first.statistics.stddev);
  EXPECT_EQ(engine->DeviceStatuses()[0].idle_block_bytes, after_first.idle_block_bytes);
  EXPECT_EQ(engine->DeviceStatuses()[0].peak_bytes, after_first.peak_bytes);
}

TEST(CpuEngineTest, IdleBlocksGiveWayToAJobThatNeedsTheBudget) {
  // A budget that holds the second job's ST (four times the first's) and
  // one shard, only once the first job's blocks have gone.
  const int64_t st = kPaths * kIssuers * 4;
  const int64_t shard = (kIssuers + kPaths) * kColumnAlignment * 4;
  const int64_t budget = 4 * st + (4 * kIssuers + kPaths) * kColumnAlignment * 4;
  auto engine = MakeEngine(budget);
  const JobResult first = RunJob(*engine, StatisticsSpec(kColumnAlignment));
  ASSERT_TRUE(first.status.ok()) << first.status;
  EXPECT_EQ(engine->DeviceStatuses()[0].idle_block_bytes, st + shard);  // one shard in flight

  const JobSpec wider = StatisticsSpec(kColumnAlignment, 4 * kIssuers);
  auto reference = MakeEngine();
  const JobResult expected = RunJob(*reference, wider);
  ASSERT_TRUE(expected.status.ok()) << expected.status;
  const JobResult result = RunJob(*engine, wider);
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(result.statistics.stddev.size(), static_cast<size_t>(kColumns));
  EXPECT_EQ(result.statistics.stddev, expected.statistics.stddev);
  const DeviceStatus status = engine->DeviceStatuses()[0];
  EXPECT_EQ(status.bytes_in_use, 0);
  EXPECT_LE(status.peak_bytes, budget);
  EXPECT_LE(status.idle_block_bytes, budget);
  EXPECT_GT(status.idle_block_bytes, 0);
}

TEST(CpuEngineTest, DeadlineStopsAJobAtAShardBoundaryAndFreesItsMemory) {
  // A job far longer than its deadline, whose reader keeps reading: only the
  // engine's own deadline check can stop it.
  auto engine = MakeEngine(kBudget, 1, 2);
  const int64_t paths = 20000, issuers = 50;
  const int64_t columns = 400 * kColumnAlignment;
  JobSpec spec = MakeSpec(SpreadMarket(issuers), paths, 1,
                          ScenarioMatrix::Generated(issuers, columns, 2, 0.0f, 1.0f),
                          Output(false, true, false), kColumnAlignment);
  const auto start = std::chrono::steady_clock::now();
  const std::chrono::milliseconds deadline(300);
  spec.deadline = start + deadline;
  absl::StatusOr<std::shared_ptr<Job>> submitted = engine->Submit(std::move(spec));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const JobResult result = Collect(**submitted);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.status.code(), absl::StatusCode::kDeadlineExceeded) << result.status;
  // The deadline plus a shard or two: the job's 400 shards take far longer.
  // Measured: < 0.33 s (the whole test); bound 0.3 s + 1 s x TimeScale().
  EXPECT_LT(seconds, std::chrono::duration<double>(deadline).count() + 1.0 * TimeScale());
  EXPECT_LT(engine->DeviceStatuses()[0].shards_done, 400);
  EXPECT_EQ(BytesInUseAfterASecond(*engine), 0);
}

TEST(CpuEngineTest, CancelStopsAJobWhoseReaderStalledAndFreesItsMemory) {
  // 100 shards of 20 MB of full output against 32 MB of pending chunks: the
  // engine stops after the first shards while the reader does not read.
  EngineOptions options;
  options.max_pending_bytes_per_job = 32 << 20;
  auto engine = MakeEngine(kBudget, 1, 2, options);
  const int64_t paths = 20000, issuers = 20;
  const int64_t columns = 100 * kColumnAlignment;
  absl::StatusOr<std::shared_ptr<Job>> submitted = engine->Submit(MakeSpec(
      SpreadMarket(issuers), paths, 1, ScenarioMatrix::Generated(issuers, columns, 2, 0.0f, 1.0f),
      Output(true, false, false), kColumnAlignment));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  Job& job = **submitted;
  ASSERT_EQ(job.plan().shard_count, 100);

  // Read one chunk, never release it, then stop reading.
  const auto deadline = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(30));
  std::optional<ResultChunk> first;
  while (!(first = job.results().Pop()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(first.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LT(engine->DeviceStatuses()[0].shards_done, 100);
  EXPECT_GT(engine->DeviceStatuses()[0].bytes_in_use, 0);

  job.Cancel(absl::CancelledError("the client stopped reading"));
  absl::Status status;
  // Drained in < 0.47 s (the whole test less its sleep, measured); bound 1 s x TimeScale().
  const auto drain_deadline = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(1));
  bool drained = false;
  while (!(drained = job.results().Drained(&status)) &&
         std::chrono::steady_clock::now() < drain_deadline) {
    job.results().Pop();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(drained);
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(status.message()), HasSubstr("the client stopped reading"));
  EXPECT_FALSE(job.results().Pop().has_value());
  EXPECT_EQ(BytesInUseAfterASecond(*engine), 0);
  EXPECT_LT(engine->DeviceStatuses()[0].shards_done, 100);

  // The engine goes on serving.
  const JobResult next = RunJob(*engine, ReproducibilitySpec(0, 0));
  ASSERT_TRUE(next.status.ok()) << next.status;
  ExpectProductMatches(next, ReferenceScenarios(kScenarioSeed, kIssuers, kColumns, 0.0, 1.0),
                       kIssuers);
  EXPECT_EQ(BytesInUseAfterASecond(*engine), 0);
}

TEST(CpuEngineTest, JobOverEveryBudgetIsRefusedBeforeAnyWork) {
  const int64_t st_bytes = kPaths * kIssuers * 4;
  auto engine = MakeEngine(st_bytes - 1);
  absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(ReproducibilitySpec(0, 0));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted);
  // The message names the bytes needed (ST plus one 256-column block) and
  // the largest budget.
  const int64_t needed = st_bytes + (kIssuers + kPaths) * kColumnAlignment * 4;
  EXPECT_THAT(std::string(job.status().message()), HasSubstr(absl::StrCat("needs ", needed)));
  EXPECT_THAT(std::string(job.status().message()), HasSubstr(absl::StrCat(st_bytes - 1)));
  EXPECT_EQ(engine->DeviceStatuses()[0].peak_bytes, 0);  // nothing was allocated

  // A job that fits still runs.
  JobSpec small = ReproducibilitySpec(0, 0);
  small.paths = 100;
  small.shard_columns = kColumnAlignment;
  const JobResult next = RunJob(*engine, std::move(small));
  EXPECT_TRUE(next.status.ok()) << next.status;
}

TEST(CpuEngineTest, ShardsNarrowToFitTheBudgetAndGiveTheSameResult) {
  // The budget holds ST and one 256-column block, not the planner's width.
  const int64_t st_bytes = kPaths * kIssuers * 4;
  const int64_t budget = st_bytes + (kIssuers + kPaths) * kColumnAlignment * 4;
  JobSpec wide = ReproducibilitySpec(0, 0);
  wide.shard_columns = 4 * kColumnAlignment;
  auto roomy = MakeEngine(int64_t{1} << 30);
  const JobResult reference = RunJob(*roomy, wide);
  ASSERT_TRUE(reference.status.ok()) << reference.status;

  auto tight = MakeEngine(budget);
  absl::StatusOr<std::shared_ptr<Job>> job = tight->Submit(wide);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->plan().shard_columns, kColumnAlignment);
  const JobResult result = Collect(**job);
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.sc, reference.sc);
  EXPECT_LE(tight->DeviceStatuses()[0].peak_bytes, budget);
  EXPECT_EQ(BytesInUseAfterASecond(*tight), 0);
}

}  // namespace
}  // namespace pricer
