// Priorities on a real in-process server: a high-priority job overtakes a
// long low-priority one on a device that runs one shard at a time.
#include <algorithm>
#include <iterator>
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

// A high-priority job overtakes a long low-priority one on a device that
// runs one shard at a time: once it arrives, its shards run back to back.
TEST(Priority, HighPriorityJobOvertakesALongLowPriorityJob) {
  ServerOptions options;
  options.devices = "cpu";
  options.engine.max_shards_in_flight = 1;
  options.auth_tokens_file = TesterTokenFile();  // the right to a priority above 0
  std::unique_ptr<PricerServer> server = StartTestServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  // With 16,384 paths the planner's shards are 1024 columns wide (64 MiB of
  // SC): the low job has 20 of them, the high job 3.
  Problem low = StatisticsProblem(/*issuers=*/20, /*paths=*/16384, /*columns=*/20'000, 1);
  low.request.set_priority(-5);
  Problem high = StatisticsProblem(/*issuers=*/20, /*paths=*/16384, /*columns=*/3072, 2);
  high.request.set_priority(10);

  Call low_call(*stub, low.request, Scaled(kCallTimeout), kTesterToken);
  ASSERT_TRUE(low_call.Read());
  const v1::JobAccepted low_accepted = Accepted(low_call.replies());
  ASSERT_EQ(low_accepted.plan().shard_count(), 20);
  PriceCall low_result;
  Clock::time_point low_done;
  std::thread low_reader([&] {
    low_result = low_call.Finish();
    low_done = Clock::now();
  });
  const PriceCall high_result =
      Call(*stub, high.request, Scaled(kCallTimeout), kTesterToken).Finish();
  const Clock::time_point high_done = Clock::now();
  low_reader.join();

  ExpectMeansMatch(high_result, high.request, high.a);
  ExpectMeansMatch(low_result, low.request, low.a);
  EXPECT_LT(high_done, low_done) << "the high-priority job finished last";

  const std::string high_id = Accepted(high_result.replies).job_id();
  ASSERT_EQ(Accepted(high_result.replies).plan().shard_count(), 3);
  const std::vector<ShardInterval> intervals = server->engine().ShardIntervals(0);
  std::vector<ShardInterval> high_shards;
  std::copy_if(intervals.begin(), intervals.end(), std::back_inserter(high_shards),
               [&](const ShardInterval& s) { return s.job_id == high_id; });
  ASSERT_EQ(high_shards.size(), 3u);
  Clock::time_point high_begin = high_shards[0].start, high_end = high_shards[0].end;
  for (const ShardInterval& s : high_shards) {
    high_begin = std::min(high_begin, s.start);
    high_end = std::max(high_end, s.end);
  }
  int64_t low_between = 0, low_after = 0;
  for (const ShardInterval& s : intervals) {
    if (s.job_id != low_accepted.job_id()) continue;
    low_between += s.start >= high_begin && s.start < high_end;
    low_after += s.start >= high_end;
  }
  EXPECT_EQ(low_between, 0) << "low-priority shards ran between the high-priority ones";
  EXPECT_GE(low_after, 1) << "the low job had finished before the high one ran";
}

}  // namespace
}  // namespace pricer::testing
