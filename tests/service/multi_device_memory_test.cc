// Device memory of the multi-device scheduler through a real in-process
// server on cpu devices: jobs over every budget and a full queue refused
// before any work, memory given back on cancellation and deadlines, and jobs
// that must not wait on memory only another waiting job could give back.
#include <chrono>
#include <memory>
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

using ::testing::HasSubstr;

// A job whose ST alone exceeds every budget is refused before any work.
TEST(MultiDevice, JobLargerThanEveryBudgetIsRefusedBeforeAnyWork) {
  // ST: 4 * 4000 * 50 = 800,000 bytes; ST and one 256-column shard
  // (4 * 4050 * 256 = 4,147,200 bytes) = 4,947,200 bytes.
  const v1::PriceRequest request = SmallRequest(/*issuers=*/50, /*paths=*/4000, /*columns=*/2000);
  for (const int64_t budget : {500'000, 2'000'000}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", budget);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
    const PriceCall call = RunCall(*stub, request);
    EXPECT_EQ(call.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << call.status.error_message();
    EXPECT_THAT(call.status.error_message(), HasSubstr("4947200 bytes"));
    EXPECT_THAT(call.status.error_message(),
                HasSubstr("largest device budget is " + std::to_string(budget) + " bytes"));
    EXPECT_TRUE(call.replies.empty());
    const v1::ListDevicesReply devices = ListDevices(*stub);
    ASSERT_EQ(devices.devices_size(), 2);
    for (const v1::DeviceInfo& device : devices.devices()) {
      EXPECT_EQ(device.peak_bytes(), 0) << device.name();
      EXPECT_EQ(device.bytes_in_use(), 0) << device.name();
      EXPECT_EQ(device.shards_done(), 0) << device.name();
    }
    EXPECT_EQ(devices.queued_jobs(), 0);
  }
}

// A full queue refuses a job before any work; cancelling frees its slots.
TEST(MultiDevice, FullQueueIsRefusedUntilJobsEnd) {
  EngineOptions engine;
  engine.max_queued_jobs = 2;
  engine.max_pending_bytes_per_job = 8 << 20;
  std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", 64 << 20, engine);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  std::vector<std::unique_ptr<Call>> stalled;
  for (int k = 0; k < 2; ++k) {
    stalled.push_back(std::make_unique<Call>(*stub, EndlessRequest()));
    ASSERT_TRUE(stalled.back()->Read());
    ASSERT_TRUE(stalled.back()->replies().front().has_accepted());
  }
  const v1::ListDevicesReply devices = ListDevices(*stub);
  EXPECT_EQ(devices.queued_jobs(), 2);
  EXPECT_EQ(devices.max_queued_jobs(), 2);

  const PriceCall refused = RunCall(*stub, SmallRequest());
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.status.error_message();
  EXPECT_THAT(refused.status.error_message(), HasSubstr("--max-queued-jobs"));
  EXPECT_THAT(refused.status.error_message(), HasSubstr("2 jobs"));
  EXPECT_TRUE(refused.replies.empty());
  EXPECT_EQ(ListDevices(*stub).queued_jobs(), 2);

  for (const std::unique_ptr<Call>& call : stalled) {
    call->Cancel();
    const PriceCall ended = call->Finish();
    EXPECT_EQ(ended.status.error_code(), grpc::StatusCode::CANCELLED)
        << ended.status.error_message();
  }
  // Idle in < 0.14 s (the whole test, measured); bound 1 s x TimeScale().
  EXPECT_LT(SecondsUntilIdle(*stub), kIdleWithinSeconds * TimeScale());
  const Problem problem = MakeProblem(6, 800, 70);
  ExpectResultIsProduct(RunCall(*stub, problem.request), problem.request, problem.a);
}

// A cancelled job gives its device memory back within a second (times
// TimeScale()).
TEST(MultiDevice, CancellationFreesDeviceMemoryWithinASecond) {
  EngineOptions engine;
  engine.max_pending_bytes_per_job = 32 << 20;
  // 20 MB per device narrows the shards to 2048 columns, one in flight.
  std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", 20'000'000, engine);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  Call call(*stub, EndlessRequest());
  for (int k = 0; k < 4; ++k) ASSERT_TRUE(call.Read());
  ASSERT_EQ(Accepted(call.replies()).plan().shard_columns(), 2048);
  v1::ListDevicesReply devices = ListDevices(*stub);
  EXPECT_GT(devices.devices(0).bytes_in_use() + devices.devices(1).bytes_in_use(), 0);

  const Clock::time_point cancelled = Clock::now();
  call.Cancel();
  const PriceCall ended = call.Finish();
  EXPECT_EQ(ended.status.error_code(), grpc::StatusCode::CANCELLED) << ended.status.error_message();
  SecondsUntilIdle(*stub);
  // Freed in < 0.23 s (the whole test less its sleep, measured); bound 1 s x TimeScale().
  EXPECT_LT(SecondsSince(cancelled), kIdleWithinSeconds * TimeScale())
      << "memory still held after the cancel";
  devices = ListDevices(*stub);
  for (const v1::DeviceInfo& device : devices.devices()) {
    EXPECT_EQ(device.bytes_in_use(), 0) << device.name();
  }
  const int64_t done = ShardsDone(devices);
  EXPECT_LT(done, 98);  // of ceil(200,000 / 2048) shards
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(ShardsDone(ListDevices(*stub)), done) << "shards still run after the cancel";
}

// A deadline stops the job, frees its memory, and the server goes on. The
// job (10^9 columns: 40 TB of SC) cannot end within the deadline on any
// machine; 200,000 columns (8 GB) once did, under TSan's 10 s on an
// Emerald Rapids. The deadline is long enough for shards to finish on a
// loaded one (under TSan, beside other tests, 300 ms once passed without a
// shard done): 2 s, times TimeScale().
TEST(MultiDevice, DeadlineStopsTheJobAndFreesItsMemory) {
  EngineOptions engine;
  engine.max_pending_bytes_per_job = 32 << 20;
  std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", 20'000'000, engine);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  v1::PriceRequest request = EndlessRequest();
  request.set_paths(10'000);
  request.mutable_scenarios()->mutable_generated()->set_columns(1'000'000'000);
  const std::chrono::milliseconds deadline = Scaled(std::chrono::seconds(2));
  const Clock::time_point start = Clock::now();
  Call streaming(*stub, request, deadline);
  const PriceCall call = streaming.FinishKeepingFirstAndLast();
  const Clock::time_point ended = Clock::now();
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << call.status.error_message();
  EXPECT_GE(SecondsSince(start), std::chrono::duration<double>(deadline).count() - 0.01);
  ASSERT_FALSE(call.replies.empty());
  ASSERT_TRUE(call.replies.front().has_accepted());
  EXPECT_FALSE(call.replies.back().has_finished());
  const v1::JobAccepted& accepted = Accepted(call.replies);
  const int64_t columns = accepted.column_end() - accepted.column_begin();
  const int64_t shard_columns = accepted.plan().shard_columns();
  ASSERT_GT(shard_columns, 0);

  SecondsUntilIdle(*stub);
  // Freed in < 0.29 s (the test less deadline and sleep, measured); bound 1 s x TimeScale().
  EXPECT_LT(SecondsSince(ended), kIdleWithinSeconds * TimeScale())
      << "memory still held after the deadline";
  const int64_t done = ShardsDone(ListDevices(*stub));
  EXPECT_GT(done, 0);
  EXPECT_LT(done, (columns + shard_columns - 1) / shard_columns);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(ShardsDone(ListDevices(*stub)), done) << "shards still run after the deadline";

  const Problem problem = MakeProblem(6, 800, 70);
  ExpectResultIsProduct(RunCall(*stub, problem.request), problem.request, problem.a);
}

// Two jobs that each copy out their terminal prices before their first
// shard, on a device whose budget holds one job's ST and shard but not two
// STs and a shard: neither may hold its ST while waiting for room that only
// the other can give back.
TEST(Liveness, JobsHoldingOnlyTheirTerminalPricesDoNotWaitOnEachOther) {
  // ST: 4 * 100,000 * 32 = 12.8 MB, computed in tens of milliseconds; a
  // shard of 256 columns: 4 * 100,032 * 256 = 102.4 MB.
  const int64_t issuers = 32, paths = 100'000, columns = 512;
  const int64_t resident = ResidentBytes(issuers, paths);
  const int64_t budget = resident + ShardBytes(issuers, paths, 256) + resident / 2;
  std::unique_ptr<PricerServer> server = StartCpuServer("cpu", budget);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  const Problem jobs[] = {StatisticsProblem(issuers, paths, columns, 1),
                          StatisticsProblem(issuers, paths, columns, 2)};
  // The second job arrives while the first computes its ST.
  Call first(*stub, jobs[0].request, Scaled(std::chrono::seconds(10)));
  ASSERT_TRUE(first.Read());
  ASSERT_EQ(Accepted(first.replies()).plan().device_plans(0).shards_in_flight(), 1);
  Call second(*stub, jobs[1].request, Scaled(std::chrono::seconds(10)));
  ExpectMeansMatch(first.Finish(), jobs[0].request, jobs[0].a);
  ExpectMeansMatch(second.Finish(), jobs[1].request, jobs[1].a);
  const v1::ListDevicesReply devices = ListDevices(*stub);
  EXPECT_LE(devices.devices(0).peak_bytes(), budget);
  EXPECT_EQ(devices.devices(0).shards_done(), 4);
}

// A job whose client stops reading waits for it, but must not keep the
// device memory another job needs: the other job completes meanwhile.
TEST(Liveness, StalledReaderDoesNotHoldBackAJobThatNeedsItsMemory) {
  // The stalled job takes 8.43 MB of a 12 MB budget (ST and one shard of
  // 1024 columns); the other needs 6.4 MB (ST and one shard of 768 columns).
  const int64_t budget = 12'000'000;
  const Problem stalled = MakeProblem(/*issuers=*/20, /*paths=*/2000, /*columns=*/8000, 5);
  const Problem other = MakeProblem(/*issuers=*/20, /*paths=*/2000, /*columns=*/3000, 6);
  EngineOptions engine;
  engine.max_pending_bytes_per_job = 2 * 4 * 2000 * 1024;  // two of its shards
  std::unique_ptr<PricerServer> server = StartCpuServer("cpu", budget, engine);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  Call stalled_call(*stub, stalled.request);
  ASSERT_TRUE(stalled_call.Read());
  const v1::Plan& stalled_plan = Accepted(stalled_call.replies()).plan();
  ASSERT_EQ(stalled_plan.shard_columns(), 1024);
  ASSERT_EQ(stalled_plan.device_plans(0).shards_in_flight(), 1);
  // Let it fill its bound and hold its memory.
  const Clock::time_point start = Clock::now();
  while (ListDevices(*stub).devices(0).bytes_in_use() == 0 &&
         SecondsSince(start) < 5 * TimeScale()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  const PriceCall other_result =
      Call(*stub, other.request, Scaled(std::chrono::seconds(5))).Finish();
  ExpectResultIsProduct(other_result, other.request, other.a);
  EXPECT_EQ(Accepted(other_result.replies).plan().shard_columns(), 768);

  ExpectResultIsProduct(stalled_call.Finish(), stalled.request, stalled.a);
  const v1::ListDevicesReply devices = ListDevices(*stub);
  EXPECT_LE(devices.devices(0).peak_bytes(), budget);
  EXPECT_EQ(devices.devices(0).bytes_in_use(), 0);
}

}  // namespace
}  // namespace pricer::testing
