// The multi-device scheduler through a real in-process server on cpu
// devices: memory budgets and shards in flight per device, reproducibility
// across device counts and shard widths, and concurrent jobs beside a
// stalled reader.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/service/multi_device_test_util.h"
#include "tests/service/service_test_util.h"
#include "tests/time_scale.h"

namespace pricer::testing {
namespace {

using ::testing::ElementsAre;

// Budgets that hold one shard per device: each device runs its shards
// strictly one after another, within its budget, and both take part.
TEST(MultiDevice, OneShardInFlightPerDeviceRunsShardsOneAfterAnother) {
  const Problem problem = ScenarioProblem();
  const int64_t budget = BudgetFor(1.5);
  std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", budget);
  ASSERT_NE(server, nullptr);
  const ServedRun run = RunOn(*server, problem.request);
  ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();

  const v1::Plan& plan = Accepted(run.call.replies).plan();
  EXPECT_EQ(plan.shard_columns(), 256);
  EXPECT_EQ(plan.shard_count(), 12);  // ceil(3000 / 256)
  EXPECT_THAT(plan.devices(), ElementsAre("cpu0", "cpu1"));
  ASSERT_EQ(plan.device_plans_size(), 2);
  for (const v1::DevicePlan& device : plan.device_plans()) {
    EXPECT_EQ(device.shards_in_flight(), 1) << device.device();
    EXPECT_EQ(device.resident_bytes(), kResident) << device.device();
    EXPECT_EQ(device.shard_bytes(), kShard256) << device.device();
  }
  ExpectResultIsProduct(run.call, problem.request, problem.a);
  ExpectScheduleAccounted(run, {budget, budget});

  for (int d = 0; d < 2; ++d) {
    const v1::DeviceInfo& info = run.devices.devices(d);
    EXPECT_GT(info.shards_done(), 0) << info.name() << " took no shard";
    // ST and exactly one A/SC buffer set, never two.
    EXPECT_EQ(info.peak_bytes(), kResident + kShard256) << info.name();
    const std::vector<ShardInterval>& intervals = run.intervals[d];
    for (size_t k = 1; k < intervals.size(); ++k) {
      EXPECT_GE(intervals[k].start, intervals[k - 1].end)
          << info.name() << ": shard " << intervals[k].shard << " started before shard "
          << intervals[k - 1].shard << " ended";
    }
  }
}

// The same budget on both devices: the planner keeps the widest shard that
// fits and runs as many as the rest of the budget holds. From 768 columns
// (3 x 256) it narrows to 256, so a budget of 2.5 shards holds 2. A cpu
// device runs at most one shard per thread, so these devices get 2 threads.
void ExpectTwoInFlight(const Problem& problem, const Result& serial) {
  const int64_t budget = BudgetFor(2.5);
  const ServedRun run = RunOnCpuDevices(problem.request, {{budget, 2}, {budget, 2}});
  ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();
  const v1::Plan& plan = Accepted(run.call.replies).plan();
  EXPECT_EQ(plan.shard_columns(), 256);
  ASSERT_EQ(plan.device_plans_size(), 2);
  EXPECT_EQ(plan.device_plans(0).shards_in_flight(), 2);
  EXPECT_EQ(plan.device_plans(1).shards_in_flight(), 2);
  ExpectScheduleAccounted(run, {budget, budget});
  EXPECT_TRUE(AnyOverlap(run.intervals[0]) || AnyOverlap(run.intervals[1]))
      << "no device ran two shards at once";
  for (const v1::DeviceInfo& info : run.devices.devices()) {
    EXPECT_GE(info.peak_bytes(), kResident + kShard256) << info.name();
  }
  ExpectSameResult(Collect(run.call, problem.request), serial, kPaths, 0, kColumns, "2 in flight");
}

// Three in flight: the narrowest device sets the width (256 columns), a
// device with room for 3.5 shards runs 3 at once.
void ExpectThreeInFlight(const Problem& problem, const Result& serial) {
  const int64_t small = BudgetFor(1.5), large = BudgetFor(3.5);
  const ServedRun run = RunOnCpuDevices(problem.request, {{small, 1}, {large, 3}});
  ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();
  const v1::Plan& plan = Accepted(run.call.replies).plan();
  EXPECT_EQ(plan.shard_columns(), 256);
  ASSERT_EQ(plan.device_plans_size(), 2);
  EXPECT_EQ(plan.device_plans(0).shards_in_flight(), 1);
  EXPECT_EQ(plan.device_plans(1).shards_in_flight(), 3);
  ExpectScheduleAccounted(run, {small, large});
  EXPECT_FALSE(AnyOverlap(run.intervals[0])) << "cpu0 holds one shard only";
  EXPECT_TRUE(AnyOverlap(run.intervals[1])) << "cpu1 never ran two shards at once";
  EXPECT_GE(run.devices.devices(1).peak_bytes(), kResident + kShard256);
  ExpectSameResult(Collect(run.call, problem.request), serial, kPaths, 0, kColumns, "3 in flight");
}

// The budget holds 3.5 shards but the device has one thread: one at a time.
void ExpectOneAtATimeOnOneThread(const Problem& problem) {
  const int64_t large = BudgetFor(3.5);
  const ServedRun run = RunOnCpuDevices(problem.request, {{large, 1}});
  ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();
  EXPECT_EQ(Accepted(run.call.replies).plan().device_plans(0).shards_in_flight(), 1);
  EXPECT_FALSE(AnyOverlap(run.intervals[0]));
}

// Budgets that hold several shards: the plan says so, shards overlap on
// a device, peaks stay within budgets and the result does not change.
TEST(MultiDevice, ShardsInFlightOverlapWithinTheBudgetWithTheSameResult) {
  const Problem problem = ScenarioProblem();
  Result serial;
  {
    std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", BudgetFor(1.5));
    ASSERT_NE(server, nullptr);
    const ServedRun run = RunOn(*server, problem.request);
    ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();
    serial = Collect(run.call, problem.request);
  }

  ASSERT_NO_FATAL_FAILURE(ExpectTwoInFlight(problem, serial));
  ASSERT_NO_FATAL_FAILURE(ExpectThreeInFlight(problem, serial));
  ExpectOneAtATimeOnOneThread(problem);
}

// The same numbers whatever the device count, the budgets (and so the
// shard widths) and the column range.
TEST(MultiDevice, ResultIsBitwiseIdenticalAcrossDevicesBudgetsAndRanges) {
  const Problem problem = ScenarioProblem();
  Result reference;
  {
    std::unique_ptr<PricerServer> server = StartCpuServer("cpu", kTestBudgetBytes);
    ASSERT_NE(server, nullptr);
    const ServedRun run = RunOn(*server, problem.request);
    ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();
    EXPECT_EQ(Accepted(run.call.replies).plan().shard_columns(), 3072);
    ExpectResultIsProduct(run.call, problem.request, problem.a);
    reference = Collect(run.call, problem.request);
  }

  struct Config {
    std::string devices;
    int64_t budget;
    int64_t column_begin, column_end;
    int64_t shard_columns;  // what the planner must choose
  };
  const int64_t budget_768 = kResident + kShard768 + kShard768 / 5;
  const std::vector<Config> configs = {
      {"cpu:2", kTestBudgetBytes, 0, kColumns, 3072},  // one shard: one device works
      {"cpu:2", BudgetFor(1.5), 0, kColumns, 256},
      {"cpu:3", budget_768, 0, kColumns, 768},
      {"cpu:3", BudgetFor(1.5), 0, kColumns, 256},
      // Columns [300, 2500): the shards cover [256, 2560); from 2304 columns
      // the planner halves to 1024, then 512.
      {"cpu:3", budget_768, 300, 2500, 512},
  };
  std::set<int64_t> widths;
  for (const Config& config : configs) {
    const std::string what = config.devices + " budget " + std::to_string(config.budget) +
                             " columns [" + std::to_string(config.column_begin) + ", " +
                             std::to_string(config.column_end) + ")";
    SCOPED_TRACE(what);
    std::unique_ptr<PricerServer> server = StartCpuServer(config.devices, config.budget);
    ASSERT_NE(server, nullptr);
    v1::PriceRequest request = problem.request;
    request.set_column_begin(config.column_begin);
    request.set_column_end(config.column_end);
    const ServedRun run = RunOn(*server, request);
    ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();
    const v1::JobAccepted& accepted = Accepted(run.call.replies);
    EXPECT_EQ(accepted.plan().shard_columns(), config.shard_columns);
    EXPECT_EQ(accepted.column_begin(), config.column_begin);
    EXPECT_EQ(accepted.column_end(), config.column_end);
    widths.insert(accepted.plan().shard_columns());
    ExpectScheduleAccounted(run, std::vector<int64_t>(run.devices.devices_size(), config.budget));
    const Result result = Collect(run.call, request);
    ExpectSameResult(result, reference, kPaths, config.column_begin, config.column_end, what);
    if (config.column_begin > 0) {
      EXPECT_TRUE(std::isnan(result.sc[(config.column_begin - 1) * kPaths]));
      EXPECT_TRUE(std::isnan(result.mean[config.column_end]));
    }
  }
  EXPECT_THAT(widths, ElementsAre(256, 512, 768, 3072));
}

// `jobs` jobs at once, each checked against its own float64 reference.
void ExpectConcurrentJobsComplete(v1::Pricer::Stub& stub, int jobs) {
  std::vector<Problem> problems;
  for (int k = 0; k < jobs; ++k) problems.push_back(MakeProblem(20, 1000, 1200, 1000 + k));
  std::vector<PriceCall> calls(jobs);
  {
    std::vector<std::thread> clients;
    for (int k = 0; k < jobs; ++k) {
      clients.emplace_back([&, k] { calls[k] = RunCall(stub, problems[k].request); });
    }
    for (std::thread& client : clients) client.join();
  }
  for (int k = 0; k < jobs; ++k) {
    SCOPED_TRACE("job " + std::to_string(k));
    ExpectResultIsProduct(calls[k], problems[k].request, problems[k].a);
  }
  for (int k = 1; k < jobs; ++k) {
    // Different seeds, different paths.
    EXPECT_NE(Collect(calls[k], problems[k].request).st[0],
              Collect(calls[0], problems[0].request).st[0]);
  }
}

// The stalled job of `shard_count` shards, whose pending bound is
// `max_pending_bytes` and each shard `shard_output` bytes of output, beside
// `other_jobs` jobs that completed: it holds no more than its bound, and is
// held there: it cannot reserve another shard's output.
void ExpectStalledJobHeldAtItsBound(v1::Pricer::Stub& stub, int64_t max_pending_bytes,
                                    int64_t shard_output, int64_t shard_count, int other_jobs) {
  v1::ListDevicesReply devices = ListDevices(stub);
  const Clock::time_point start = Clock::now();
  while (devices.pending_bytes() + shard_output <= max_pending_bytes &&
         SecondsSince(start) < 10 * TimeScale()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    devices = ListDevices(stub);
  }
  EXPECT_GT(devices.pending_bytes() + shard_output, max_pending_bytes);
  EXPECT_LE(devices.pending_bytes(), max_pending_bytes);
  EXPECT_LE(devices.pending_bytes(), devices.max_pending_bytes());
  EXPECT_EQ(devices.queued_jobs(), 1);
  // The stalled job is held back: its shards wait for its reader. (A few
  // chunks still drain into gRPC's transport buffers, which frees their
  // bytes, so the count may creep; the job must not run to its end.)
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  devices = ListDevices(stub);
  EXPECT_LT(ShardsDone(devices) - other_jobs, shard_count)
      << "the stalled job ran to its end without its reader";
  EXPECT_EQ(devices.queued_jobs(), 1);
  EXPECT_LE(devices.pending_bytes(), max_pending_bytes);
}

// Eight jobs at once on two devices, each checked against its own float64
// reference, while a ninth client stalls: its job fills its pending bound and
// waits, the others complete, and it completes once its client reads again.
TEST(MultiDevice, ConcurrentJobsCompleteBesideAStalledReader) {
  // The stalled job: 2000 paths x 8000 columns (64 MB of SC). A 16 MB budget
  // narrows its shards to 1024 columns (8 MB of SC each), one in flight,
  // which leaves each device room for the small jobs beside it.
  const Problem stalled = MakeProblem(/*issuers=*/20, /*paths=*/2000, /*columns=*/8000, 99);
  const int64_t budget = 16'000'000;
  const int64_t stalled_shard_output = 4 * 2000 * 1024;
  EngineOptions engine;
  engine.max_pending_bytes_per_job = 3 * stalled_shard_output;
  std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", budget, engine);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  Call stalled_call(*stub, stalled.request);
  ASSERT_TRUE(stalled_call.Read());
  const v1::Plan& stalled_plan = Accepted(stalled_call.replies()).plan();
  ASSERT_EQ(stalled_plan.shard_columns(), 1024);
  ASSERT_EQ(stalled_plan.shard_count(), 8);

  constexpr int kJobs = 8;
  ExpectConcurrentJobsComplete(*stub, kJobs);

  // The stalled job holds no more than its bound, and is held there.
  ExpectStalledJobHeldAtItsBound(*stub, engine.max_pending_bytes_per_job, stalled_shard_output,
                                 stalled_plan.shard_count(), kJobs);

  const PriceCall stalled_result = stalled_call.Finish();
  ExpectResultIsProduct(stalled_result, stalled.request, stalled.a);
  const v1::ListDevicesReply devices = ListDevices(*stub);
  for (const v1::DeviceInfo& device : devices.devices()) {
    EXPECT_LE(device.peak_bytes(), budget) << device.name();
    EXPECT_GT(device.shards_done(), 0) << device.name();
  }
  EXPECT_EQ(devices.pending_bytes(), 0);
}

}  // namespace
}  // namespace pricer::testing
