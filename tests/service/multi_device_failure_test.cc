// Failures on the devices of a real in-process server: injected shard
// failures retried on another device or ending the call naming the devices,
// and a lost device that takes no more work.
#include <algorithm>
#include <climits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backends/cpu/cpu_device.h"
#include "tests/service/flaky_cpu_device.h"
#include "tests/service/multi_device_test_util.h"
#include "tests/service/service_test_util.h"
#include "tests/time_scale.h"

namespace pricer::testing {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kFlakySeed = 666;

std::unique_ptr<PricerServer> StartFlakyServer(int devices,
                                               std::shared_ptr<InjectedFailures> failures) {
  std::vector<std::unique_ptr<Device>> list;
  for (int d = 0; d < devices; ++d) {
    list.push_back(std::make_unique<FlakyCpuDevice>("cpu" + std::to_string(d), BudgetFor(1.5),
                                                    InjectedFailures::Fault(failures)));
  }
  return StartWithDevices(std::move(list));
}

// A shard that fails once is retried on the other device; the result
// does not change.
TEST(ShardFailure, FailedShardIsRetriedOnAnotherDevice) {
  const Problem problem = MakeProblem(kIssuers, kPaths, kColumns, kFlakySeed);
  Result clean;
  {
    std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", BudgetFor(1.5));
    ASSERT_NE(server, nullptr);
    const ServedRun run = RunOn(*server, problem.request);
    ExpectResultIsProduct(run.call, problem.request, problem.a);
    clean = Collect(run.call, problem.request);
  }

  auto failures = std::make_shared<InjectedFailures>(kFlakySeed, std::set<int64_t>{1}, 1);
  std::unique_ptr<PricerServer> server = StartFlakyServer(2, failures);
  ASSERT_NE(server, nullptr);
  const ServedRun run = RunOn(*server, problem.request);
  ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();
  ASSERT_TRUE(run.call.replies.back().has_finished());
  ExpectSameResult(Collect(run.call, problem.request), clean, kPaths, 0, kColumns, "retried");
  ExpectScheduleAccounted(run, {BudgetFor(1.5), BudgetFor(1.5)});

  // Shard 1 failed once, and the other device ran it.
  const std::vector<std::pair<int64_t, std::string>> failed = failures->failed();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].first, 1);
  const int retried_on = failed[0].second == "cpu0" ? 1 : 0;
  const std::vector<ShardInterval>& intervals = run.intervals[retried_on];
  EXPECT_TRUE(std::any_of(intervals.begin(), intervals.end(),
                          [](const ShardInterval& s) { return s.shard == 1; }))
      << "shard 1 did not run on cpu" << retried_on;
  EXPECT_EQ(ShardsDone(run.devices), 12);  // the failed attempt is not counted
}

// A shard that fails on both devices ends the call with INTERNAL naming
// them; the server goes on serving.
TEST(ShardFailure, ShardFailingEverywhereEndsTheCallNamingTheDevices) {
  auto failures = std::make_shared<InjectedFailures>(kFlakySeed, std::set<int64_t>{1}, INT_MAX);
  std::unique_ptr<PricerServer> server = StartFlakyServer(2, failures);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  const Problem flaky = MakeProblem(kIssuers, kPaths, kColumns, kFlakySeed);
  const PriceCall call = RunCall(*stub, flaky.request);
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::INTERNAL) << call.status.error_message();
  const std::vector<std::pair<int64_t, std::string>> failed = failures->failed();
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_NE(failed[0].second, failed[1].second) << "retried on the device that failed";
  // "device cpuB: injected failure (retried after device cpuA: injected failure)"
  EXPECT_EQ(call.status.error_message(), "device " + failed[1].second +
                                             ": injected failure (retried after device " +
                                             failed[0].second + ": injected failure)");
  EXPECT_FALSE(call.replies.empty() || call.replies.back().has_finished());

  // Idle in < 0.64 s (the whole test, measured); bound 1 s x TimeScale().
  EXPECT_LT(SecondsUntilIdle(*stub), kIdleWithinSeconds * TimeScale());
  const Problem good = ScenarioProblem();
  ExpectResultIsProduct(RunCall(*stub, good.request), good.request, good.a);
  EXPECT_EQ(failures->failed().size(), 2u);
  // Idle in < 0.64 s (the whole test, measured); bound 1 s x TimeScale().
  EXPECT_LT(SecondsUntilIdle(*stub), kIdleWithinSeconds * TimeScale());
}

// With one device there is nowhere to retry: INTERNAL naming it.
TEST(ShardFailure, OnlyDeviceFailingEndsTheCallNamingIt) {
  auto failures = std::make_shared<InjectedFailures>(kFlakySeed, std::set<int64_t>{0}, INT_MAX);
  std::unique_ptr<PricerServer> server = StartFlakyServer(1, failures);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  const PriceCall call =
      RunCall(*stub, MakeProblem(kIssuers, kPaths, kColumns, kFlakySeed).request);
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::INTERNAL) << call.status.error_message();
  EXPECT_EQ(call.status.error_message(), "device cpu0: injected failure");
  EXPECT_EQ(failures->failed().size(), 1u);

  // Idle in < 0.12 s (the whole test, measured); bound 1 s x TimeScale().
  EXPECT_LT(SecondsUntilIdle(*stub), kIdleWithinSeconds * TimeScale());
  const Problem good = MakeProblem(6, 800, 70);
  ExpectResultIsProduct(RunCall(*stub, good.request), good.request, good.a);
}

// A device whose shard fails with DeviceLost takes no more work: the shard
// runs on the other device, the result does not change, ListDevices says
// why, and later jobs are planned on the other device only.
TEST(LostDevice, TakesNoMoreWorkAndTheOtherDeviceFinishesTheJob) {
  const Problem problem = MakeProblem(kIssuers, kPaths, kColumns, kFlakySeed);
  Result clean;
  {
    std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", BudgetFor(1.5));
    ASSERT_NE(server, nullptr);
    clean = Collect(RunOn(*server, problem.request).call, problem.request);
  }
  auto failures = std::make_shared<InjectedFailures>(kFlakySeed, std::set<int64_t>{1}, 1,
                                                     /*lose_device=*/true);
  std::unique_ptr<PricerServer> server = StartFlakyServer(2, failures);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const ServedRun run = RunOn(*server, problem.request);
  ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();
  ExpectSameResult(Collect(run.call, problem.request), clean, kPaths, 0, kColumns, "lost");

  ASSERT_EQ(failures->failed().size(), 1u);
  const std::string lost_name = failures->failed()[0].second;
  const int lost = lost_name == "cpu0" ? 0 : 1;
  v1::ListDevicesReply devices = ListDevices(*stub);
  EXPECT_EQ(devices.devices(lost).lost(), "injected fault");
  EXPECT_EQ(devices.devices(1 - lost).lost(), "");
  // Idle in < 0.82 s (the whole test, measured); bound 1 s x TimeScale().
  EXPECT_LT(SecondsUntilIdle(*stub), kIdleWithinSeconds * TimeScale());
  EXPECT_EQ(devices.devices(lost).bytes_in_use(), 0);

  // The next job: planned on the other device only, and only it works.
  const int64_t lost_done = devices.devices(lost).shards_done();
  const Problem next = MakeProblem(kIssuers, kPaths, kColumns, 7);
  const PriceCall call = RunCall(*stub, next.request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ExpectResultIsProduct(call, next.request, next.a);
  const v1::Plan& plan = call.replies.front().accepted().plan();
  EXPECT_EQ(plan.device_plans(lost).shards_in_flight(), 0);
  EXPECT_GT(plan.device_plans(1 - lost).shards_in_flight(), 0);
  devices = ListDevices(*stub);
  EXPECT_EQ(devices.devices(lost).shards_done(), lost_done);
  // One device can still take work: the server is healthy.
  EXPECT_EQ(HealthOf(*server, ""), "SERVING");
  EXPECT_EQ(HealthOf(*server, "pricer.v1.Pricer"), "SERVING");
}

// With its only device lost, a server refuses new jobs with UNAVAILABLE
// saying why, and keeps answering ListDevices.
TEST(LostDevice, ServerWithEveryDeviceLostRefusesJobsSayingWhy) {
  auto failures = std::make_shared<InjectedFailures>(kFlakySeed, std::set<int64_t>{0}, 1,
                                                     /*lose_device=*/true);
  std::unique_ptr<PricerServer> server = StartFlakyServer(1, failures);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  EXPECT_EQ(HealthOf(*server, "pricer.v1.Pricer"), "SERVING");
  const PriceCall first =
      RunCall(*stub, MakeProblem(kIssuers, kPaths, kColumns, kFlakySeed).request);
  EXPECT_FALSE(first.status.ok());
  EXPECT_THAT(first.status.error_message(), HasSubstr("injected fault"));

  const Problem next = MakeProblem(6, 800, 70);
  const PriceCall refused = RunCall(*stub, next.request);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(refused.status.error_message(), "no device can take work: injected fault");
  EXPECT_TRUE(refused.replies.empty());
  EXPECT_EQ(ListDevices(*stub).devices(0).lost(), "injected fault");
  // No device can take work: health says so, for an orchestrator to act on.
  EXPECT_EQ(HealthOf(*server, ""), "NOT_SERVING");
  EXPECT_EQ(HealthOf(*server, "pricer.v1.Pricer"), "NOT_SERVING");
  EXPECT_EQ(HealthOf(*server, "no.such.Service"), "NOT_FOUND");
}

}  // namespace
}  // namespace pricer::testing
