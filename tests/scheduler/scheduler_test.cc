// The engine's scheduling on fake devices (fake_device.h): the order in
// which a device serves clients and jobs, and how the memory budgets (each
// device's, and the host's pinned memory the devices share) admit work.
// Every shard's values are checked exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/scheduler/engine.h"
#include "server/scheduler/shard_planner.h"
#include "tests/scheduler/fake_engine.h"

namespace pricer {
namespace {

using ::testing::ElementsAre;

constexpr int64_t kResident = kFakeResidentBytes;
constexpr int64_t kShard = kFakeShardBytes;

// "seed.shard" of each shard the engine reports for `device`, in the order
// they started; the seed is found from the job's id among `jobs`.
std::vector<std::string> IntervalLabels(const Engine& engine, size_t device,
                                        const std::vector<std::shared_ptr<Job>>& jobs) {
  std::vector<ShardInterval> intervals = engine.ShardIntervals(device);
  std::stable_sort(
      intervals.begin(), intervals.end(),
      [](const ShardInterval& a, const ShardInterval& b) { return a.start < b.start; });
  std::vector<std::string> labels;
  for (const ShardInterval& interval : intervals) {
    for (const auto& job : jobs) {
      if (job->id() == interval.job_id)
        labels.push_back(absl::StrCat(job->spec().seed, ".", interval.shard));
    }
  }
  return labels;
}

void ExpectAllExact(const std::vector<std::shared_ptr<Job>>& jobs) {
  const std::vector<Received> received = CollectAll(jobs);
  for (size_t k = 0; k < jobs.size(); ++k) {
    SCOPED_TRACE(jobs[k]->id());
    ExpectExact(received[k], jobs[k]->spec());
  }
}

TEST(SchedulerFairnessTest, ClientsTakeTurnsThenTheirJobsDo) {
  FakeEngine fake = MakeFakeEngine({kFakeLargeBudget}, OneShardSlot());
  fake.control->Hold();
  auto a1 = Submitted(*fake.engine, FakeJob("a", 1, 3));
  ASSERT_TRUE(a1);
  // a1's first shard holds the only slot while the other jobs queue.
  ASSERT_TRUE(fake.control->AwaitArrivals(1));
  auto a2 = Submitted(*fake.engine, FakeJob("a", 2, 3));
  auto a3 = Submitted(*fake.engine, FakeJob("a", 3, 3));
  auto b = Submitted(*fake.engine, FakeJob("b", 4, 3));
  ASSERT_TRUE(a2 && a3 && b);
  fake.control->Open();
  ExpectAllExact({a1, a2, a3, b});

  // b takes every other turn until it is done; a's jobs take turns among
  // themselves, never one job run to its end.
  const std::vector<std::string> expected = {"1.0", "4.0", "2.0", "4.1", "3.0", "4.2",
                                             "1.1", "2.1", "3.1", "1.2", "2.2", "3.2"};
  EXPECT_EQ(RunLabels(*fake.control), expected);
  EXPECT_EQ(IntervalLabels(*fake.engine, 0, {a1, a2, a3, b}), expected);
  const DeviceStatus device = fake.engine->DeviceStatuses()[0];
  EXPECT_EQ(device.shards_done, 12);
  EXPECT_DOUBLE_EQ(device.flops, 2.0 * kFakePaths * kFakeIssuers * 12 * kColumnAlignment);
  EXPECT_EQ(device.bytes_in_use, 0);
}

TEST(SchedulerFairnessTest, AHigherPriorityRunsFirstWhoeverSentIt) {
  FakeEngine fake = MakeFakeEngine({kFakeLargeBudget}, OneShardSlot());
  fake.control->Hold();
  auto a1 = Submitted(*fake.engine, FakeJob("a", 1, 3));
  ASSERT_TRUE(a1);
  ASSERT_TRUE(fake.control->AwaitArrivals(1));
  auto a2 = Submitted(*fake.engine, FakeJob("a", 2, 3));
  auto urgent = Submitted(*fake.engine, FakeJob("b", 5, 2, /*priority=*/5));
  ASSERT_TRUE(a2 && urgent);
  fake.control->Open();
  ExpectAllExact({a1, a2, urgent});
  // The urgent job runs to its end first; then a2 (never served) before a1.
  EXPECT_THAT(RunLabels(*fake.control),
              ElementsAre("1.0", "5.0", "5.1", "2.0", "1.1", "2.1", "1.2", "2.2"));
}

TEST(SchedulerFairnessTest, WithinAPriorityClientsAlternateAndLowerPrioritiesWait) {
  FakeEngine fake = MakeFakeEngine({kFakeLargeBudget}, OneShardSlot());
  fake.control->Hold();
  auto low = Submitted(*fake.engine, FakeJob("a", 1, 2, /*priority=*/-1));
  ASSERT_TRUE(low);
  ASSERT_TRUE(fake.control->AwaitArrivals(1));
  auto x = Submitted(*fake.engine, FakeJob("a", 2, 2, /*priority=*/1));
  auto y = Submitted(*fake.engine, FakeJob("b", 3, 2, /*priority=*/1));
  ASSERT_TRUE(x && y);
  fake.control->Open();
  ExpectAllExact({low, x, y});
  // Priority 1 first, a and b alternating (b first: a was served by its
  // low-priority job), the low priority last.
  EXPECT_THAT(RunLabels(*fake.control), ElementsAre("1.0", "3.0", "2.0", "3.1", "2.1", "1.1"));
}

TEST(SchedulerBudgetTest, TheFakeCostsWhatItsContractSays) {
  FakeEngine fake = MakeFakeEngine({kFakeLargeBudget}, OneShardSlot());
  const JobSpec spec = FakeJob("a", 1, 2);
  EXPECT_EQ(fake.devices[0]->ResidentBytes(spec), kResident);
  EXPECT_EQ(fake.devices[0]->ShardBytes(spec, kColumnAlignment), kShard);
  auto job = Submitted(*fake.engine, spec);
  ASSERT_TRUE(job);
  ExpectExact(Collect(job), spec);
  ASSERT_EQ(job->device_plans().size(), 1u);
  EXPECT_EQ(job->device_plans()[0].resident_bytes, kResident);
  EXPECT_EQ(job->device_plans()[0].shard_bytes, kShard);
  // The fake allocated just that: ST plus one shard's blocks at the peak.
  const DeviceStatus device = fake.engine->DeviceStatuses()[0];
  EXPECT_EQ(device.peak_bytes, kResident + kShard);
  EXPECT_EQ(device.bytes_in_use, 0);
}

TEST(SchedulerBudgetTest, ASecondJobWaitsUntilTheFirstHasFreedTheDevice) {
  EngineOptions options;
  options.max_shards_in_flight = 2;
  FakeEngine fake = MakeFakeEngine({kResident + kShard}, options);
  fake.control->Hold();
  auto first = Submitted(*fake.engine, FakeJob("a", 1, 3));
  ASSERT_TRUE(first);
  ASSERT_TRUE(fake.control->AwaitArrivals(1));
  auto second = Submitted(*fake.engine, FakeJob("b", 2, 3));
  ASSERT_TRUE(second);
  EXPECT_EQ(first->device_plans()[0].shards_in_flight, 1);
  EXPECT_FALSE(second->Summary().started);
  EXPECT_EQ(fake.engine->Status().waiting_jobs, 1);
  fake.control->Open();
  ExpectAllExact({first, second});

  // Though b's turn came first, the device held a's state: a ran to its end,
  // and b started only once a's memory was back.
  EXPECT_THAT(RunLabels(*fake.control), ElementsAre("1.0", "1.1", "1.2", "2.0", "2.1", "2.2"));
  const std::vector<FakeJobStart> starts = fake.control->starts();
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].seed, 1u);
  EXPECT_EQ(starts[1].seed, 2u);
  EXPECT_EQ(starts[1].bytes_in_use, 0);
  EXPECT_EQ(fake.control->max_running("fake0"), 1);
  const DeviceStatus device = fake.engine->DeviceStatuses()[0];
  EXPECT_EQ(device.peak_bytes, kResident + kShard);
  EXPECT_EQ(device.bytes_in_use, 0);
}

TEST(SchedulerBudgetTest, AJobOverEveryBudgetIsRefusedBeforeAnythingStarts) {
  FakeEngine fake = MakeFakeEngine({1000, kResident + kShard - 1});
  absl::StatusOr<std::shared_ptr<Job>> job = fake.engine->Submit(FakeJob("a", 1, 2));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(job.status().message(),
            absl::StrCat("the job needs ", kResident + kShard,
                         " bytes on a device (terminal prices for 4 paths x 2 issuers plus one "
                         "shard of 256 columns); the largest device budget is ",
                         kResident + kShard - 1, " bytes"));
  EXPECT_TRUE(fake.control->starts().empty());
  EXPECT_EQ(fake.engine->Status().queued_jobs, 0);
  for (const DeviceStatus& device : fake.engine->DeviceStatuses()) {
    EXPECT_EQ(device.peak_bytes, 0) << device.name;
  }
}

TEST(SchedulerBudgetTest, ShardsRunSideBySideAsFarAsTheBudgetHoldsThem) {
  FakeEngine fake = MakeFakeEngine({kResident + 3 * kShard});  // 4 slots
  fake.control->Hold();
  auto job = Submitted(*fake.engine, FakeJob("a", 1, 6));
  ASSERT_TRUE(job);
  EXPECT_EQ(job->device_plans()[0].shards_in_flight, 3);
  ASSERT_TRUE(fake.control->AwaitArrivals(3));
  // Three shards hold their blocks at once: the budget, to the byte.
  EXPECT_EQ(fake.engine->DeviceStatuses()[0].bytes_in_use, kResident + 3 * kShard);
  fake.control->Open();
  ExpectExact(Collect(job), job->spec());
  EXPECT_EQ(fake.control->max_running("fake0"), 3);
  const DeviceStatus device = fake.engine->DeviceStatuses()[0];
  EXPECT_EQ(device.peak_bytes, kResident + 3 * kShard);
  EXPECT_EQ(device.shards_done, 6);
  EXPECT_EQ(device.bytes_in_use, 0);
}

TEST(SchedulerBudgetTest, ShardsNarrowUntilEveryDeviceHoldsOne) {
  FakeEngine fake = MakeFakeEngine({kResident + 4 * kShard, kResident + kShard});
  JobSpec spec = FakeJob("a", 1, 8);
  spec.shard_columns = 4 * kColumnAlignment;
  auto job = Submitted(*fake.engine, spec);
  ASSERT_TRUE(job);
  // 1024 and 512 columns fit only the first device; 256 fit both.
  EXPECT_EQ(job->plan().shard_columns, kColumnAlignment);
  EXPECT_EQ(job->plan().shard_count, 8);
  ASSERT_EQ(job->device_plans().size(), 2u);
  EXPECT_EQ(job->device_plans()[0].shards_in_flight, 4);
  EXPECT_EQ(job->device_plans()[1].shards_in_flight, 1);
  ExpectExact(Collect(job), spec);
  const std::vector<DeviceStatus> devices = fake.engine->DeviceStatuses();
  EXPECT_EQ(devices[0].shards_done + devices[1].shards_done, 8);
  for (const DeviceStatus& device : devices) {
    EXPECT_LE(device.peak_bytes, device.memory_budget_bytes) << device.name;
    EXPECT_EQ(device.bytes_in_use, 0) << device.name;
  }
}

// Devices that stage through the host's pinned memory, sharing `sets`
// shard staging sets of it, each device with room for four shards.
FakeEngine PinnedEngine(int64_t sets) {
  EngineOptions options;
  options.pinned_memory = std::make_shared<MemoryAccount>(sets * kFakePinnedShardBytes);
  return MakeFakeEngine({kResident + 4 * kShard, kResident + 4 * kShard}, options);
}

TEST(SchedulerPinnedMemoryTest, ShardsOnEveryDeviceWaitForTheHostsPinnedMemory) {
  FakeEngine fake = PinnedEngine(1);
  fake.control->Hold();
  std::vector<std::shared_ptr<Job>> jobs = {Submitted(*fake.engine, FakeJob("a", 1, 4)),
                                            Submitted(*fake.engine, FakeJob("b", 2, 4))};
  ASSERT_TRUE(jobs[0] && jobs[1]);
  // Each device would run four shards at once; the pinned memory holds one.
  EXPECT_EQ(jobs[0]->device_plans()[0].shards_in_flight, 4);
  EXPECT_EQ(jobs[0]->pinned_shard_bytes(),
            (std::vector<int64_t>{kFakePinnedShardBytes, kFakePinnedShardBytes}));
  ASSERT_TRUE(fake.control->AwaitArrivals(1));
  EXPECT_EQ(fake.engine->Status().pinned_bytes_in_use, kFakePinnedShardBytes);
  fake.control->Open();
  ExpectAllExact(jobs);
  // A shard that allocated beyond the bound would have failed: none did,
  // and the staging never held more than one set.
  const EngineStatus status = fake.engine->Status();
  EXPECT_EQ(status.pinned_peak_bytes, kFakePinnedShardBytes);
  EXPECT_EQ(status.pinned_bytes_in_use, 0);
  EXPECT_EQ(status.pinned_budget_bytes, kFakePinnedShardBytes);
  int64_t done = 0;
  for (const DeviceStatus& device : fake.engine->DeviceStatuses()) {
    EXPECT_EQ(device.shards_failed, 0) << device.name;
    EXPECT_LE(fake.control->max_running(device.name), 1) << device.name;
    done += device.shards_done;
  }
  EXPECT_EQ(done, 8);
}

TEST(SchedulerPinnedMemoryTest, ShardsRunSideBySideAsFarAsThePinnedMemoryHoldsThem) {
  FakeEngine fake = PinnedEngine(3);
  fake.control->Hold();
  auto job = Submitted(*fake.engine, FakeJob("a", 1, 8));
  ASSERT_TRUE(job);
  ASSERT_TRUE(fake.control->AwaitArrivals(3));
  EXPECT_EQ(fake.engine->Status().pinned_bytes_in_use, 3 * kFakePinnedShardBytes);
  fake.control->Open();
  ExpectExact(Collect(job), job->spec());
  // Three shards at once (the gate held them), never a fourth.
  EXPECT_EQ(fake.engine->Status().pinned_peak_bytes, 3 * kFakePinnedShardBytes);
  for (const DeviceStatus& device : fake.engine->DeviceStatuses()) {
    EXPECT_EQ(device.shards_failed, 0) << device.name;
  }
}

TEST(SchedulerPinnedMemoryTest, AShardWhoseStagingExceedsThePinnedMemoryIsRefused) {
  EngineOptions options;
  options.pinned_memory = std::make_shared<MemoryAccount>(kFakePinnedShardBytes - 1);
  FakeEngine fake = MakeFakeEngine({kFakeLargeBudget}, options);
  absl::StatusOr<std::shared_ptr<Job>> job = fake.engine->Submit(FakeJob("a", 1, 2));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(job.status().message(),
            absl::StrCat("the job needs ", kFakePinnedShardBytes,
                         " bytes of pinned host memory on fake0 (staging one shard of 256 "
                         "columns); the host's pinned memory is ",
                         kFakePinnedShardBytes - 1, " bytes (--pinned-memory)"));
  EXPECT_EQ(fake.engine->Status().queued_jobs, 0);
}

}  // namespace
}  // namespace pricer
