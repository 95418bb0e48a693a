// The engine's handling of lost devices on fake devices (fake_device.h): a
// DeviceLost failure takes a device out of planning, its shards go to the
// others, and with none left the engine refuses work.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/scheduler/engine.h"
#include "tests/scheduler/fake_engine.h"

namespace pricer {
namespace {

using ::testing::ElementsAre;

// Records the engine's on_device_lost calls.
struct LostCalls {
  std::mutex mu;
  std::vector<bool> any_usable;

  std::vector<bool> Get() {
    std::lock_guard lock(mu);
    return any_usable;
  }
};

EngineOptions RecordingLosses(LostCalls& calls) {
  EngineOptions options = OneShardSlot();
  options.on_device_lost = [&calls](bool any_usable) {
    std::lock_guard lock(calls.mu);
    calls.any_usable.push_back(any_usable);
  };
  return options;
}

TEST(SchedulerLostDeviceTest, ALostDeviceHandsItsWorkOnAndTakesNoMore) {
  LostCalls calls;
  FakeEngine fake = MakeFakeEngine({kFakeLargeBudget, kFakeLargeBudget}, RecordingLosses(calls));
  fake.control->FailShard(1, 1, DeviceLost(absl::InternalError("injected: illegal address")));
  const JobSpec first = FakeJob("a", 1, 4);
  auto job = Submitted(*fake.engine, first);
  ASSERT_TRUE(job);
  ExpectExact(Collect(job), first);

  const std::vector<FakeShardRun> runs = RunsOf(*fake.control, 1, 1);
  ASSERT_EQ(runs.size(), 2u);
  ASSERT_NE(runs[0].device, runs[1].device);
  const size_t lost = DeviceIndex(runs[0].device);
  const size_t survivor = DeviceIndex(runs[1].device);
  std::vector<DeviceStatus> devices = fake.engine->DeviceStatuses();
  EXPECT_EQ(devices[lost].lost, "injected: illegal address");
  EXPECT_EQ(devices[survivor].lost, "");
  EXPECT_EQ(devices[lost].shards_failed, 1);
  EXPECT_EQ(devices[survivor].shards_retried, 1);
  EXPECT_THAT(calls.Get(), ElementsAre(true));

  // A later job is planned on the survivor only, and runs there.
  const JobSpec second = FakeJob("a", 2, 4);
  auto later = Submitted(*fake.engine, second);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->device_plans()[lost].shards_in_flight, 0);
  EXPECT_EQ(later->device_plans()[survivor].shards_in_flight, 1);
  ExpectExact(Collect(later), second);
  std::vector<std::string> later_devices;
  for (const FakeShardRun& run : fake.control->runs()) {
    if (run.seed == 2) later_devices.push_back(run.device);
  }
  EXPECT_EQ(later_devices, std::vector<std::string>(4, runs[1].device));
  ExpectNoBytesHeld(*fake.engine);
}

TEST(SchedulerLostDeviceTest, WhenTheLastDeviceIsLostItsJobEndsAndSubmitRefuses) {
  LostCalls calls;
  FakeEngine fake = MakeFakeEngine({kFakeLargeBudget, kFakeLargeBudget}, RecordingLosses(calls));
  fake.control->FailShard(1, 0, DeviceLost(absl::InternalError("injected: first")));
  auto first = Submitted(*fake.engine, FakeJob("a", 1, 4));
  ASSERT_TRUE(first);
  ExpectExact(Collect(first), first->spec());
  const std::string survivor = RunsOf(*fake.control, 1, 0).at(1).device;

  fake.control->FailShard(2, 1, DeviceLost(absl::InternalError("injected: second")));
  auto second = Submitted(*fake.engine, FakeJob("a", 2, 4));
  ASSERT_TRUE(second);
  EXPECT_EQ(Collect(second).status,
            absl::UnavailableError(absl::StrCat("device ", survivor,
                                                " was lost (injected: second) and no other "
                                                "device can run the job")));
  EXPECT_THAT(calls.Get(), ElementsAre(true, false));
  ASSERT_TRUE(AwaitNoJobs(*fake.engine));
  // Shards 0 and 1 ran; nothing after the loss.
  EXPECT_EQ(RunsOf(*fake.control, 2, 2).size(), 0u);

  const std::vector<DeviceStatus> devices = fake.engine->DeviceStatuses();
  absl::StatusOr<std::shared_ptr<Job>> refused = fake.engine->Submit(FakeJob("a", 3, 1));
  EXPECT_EQ(refused.status(),
            absl::UnavailableError(
                absl::StrCat("no device can take work: ", devices[0].lost, "; ", devices[1].lost)));
  EXPECT_FALSE(devices[0].lost.empty());
  EXPECT_FALSE(devices[1].lost.empty());
  ExpectNoBytesHeld(*fake.engine);
}

// shards_failed counts "tasks that failed here (each retried elsewhere or
// fatal)" (engine.h): a fatal DeviceLost failure too, although MarkLost
// stops the job (once counted after the stop, it was missed).
TEST(SchedulerLostDeviceTest, AFatalLostDeviceFailureIsCounted) {
  FakeEngine fake = MakeFakeEngine({kFakeLargeBudget}, OneShardSlot());
  fake.control->FailShard(1, 1, DeviceLost(absl::InternalError("injected: gone")));
  auto job = Submitted(*fake.engine, FakeJob("a", 1, 4));
  ASSERT_TRUE(job);
  EXPECT_EQ(Collect(job).status.code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(AwaitNoJobs(*fake.engine));
  const DeviceStatus device = fake.engine->DeviceStatuses()[0];
  EXPECT_EQ(device.shards_done, 1);
  EXPECT_EQ(device.shards_failed, 1);
}

// A retry waits for a device other than the one it failed on. When that
// other device is lost, the failure ends the job, as on a one-device engine
// (the job used to be kept, since the failing device can still run it, and
// nothing took the retry: it hung until the engine stopped).
TEST(SchedulerLostDeviceTest, ARetryWaitingForALostDeviceDoesNotHangTheJob) {
  FakeEngine fake = MakeFakeEngine({kFakeLargeBudget, kFakeLargeBudget}, OneShardSlot());
  fake.control->Hold();
  auto job = Submitted(*fake.engine, FakeJob("a", 1, 4));
  ASSERT_TRUE(job);
  ASSERT_TRUE(fake.control->AwaitArrivals(2));  // a shard held on each device
  const std::vector<FakeShardRun> held = fake.control->runs();
  ASSERT_NE(held[0].device, held[1].device);
  // The first fails: its retry waits for the other device. Its device goes
  // on to the next shard (the third arrival).
  fake.control->FailShard(1, held[0].shard, absl::InternalError("injected fault"));
  fake.control->Allow(1, held[0].device);
  ASSERT_TRUE(fake.control->AwaitArrivals(3));
  // The other device is lost before it takes the retry.
  fake.control->FailShard(1, held[1].shard, DeviceLost(absl::InternalError("injected: gone")));
  fake.control->Allow(1, held[1].device);
  fake.control->Open();
  const Received received = CollectAll({job}, std::chrono::seconds(2))[0];
  EXPECT_EQ(received.status,
            absl::InternalError(absl::StrCat("device ", held[0].device, ": injected fault")));
}

}  // namespace
}  // namespace pricer
