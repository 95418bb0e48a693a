// How the engine shares one device between clients (JobSpec::client), with
// the real cpu backend: round robin between clients before jobs, priority
// across clients, and the per-client quotas.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <string>
#include <vector>

#include "server/scheduler/shard_planner.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

// A stats-mode job of `shards` one-block shards on a small market.
JobSpec ShardedJob(const std::string& client, int64_t shards, int priority = 0) {
  const int64_t issuers = 8;
  JobSpec spec = MakeSpec(
      MakeMarket(std::vector<double>(issuers, 100.0), std::vector<double>(issuers, 0.2), 0.01, 1.0),
      4000, 7, ScenarioMatrix::Generated(issuers, shards * kColumnAlignment, 3, 0, 1),
      Output(false, true, false), kColumnAlignment);
  spec.client = client;
  spec.priority = priority;
  return spec;
}

// One device, one shard at a time, so the order of the shards is the
// scheduler's choice alone.
std::unique_ptr<Engine> SerialEngine(EngineOptions options = {}) {
  options.max_shards_in_flight = 1;
  return MakeEngine(kBudget, 1, 1, options);
}

// The client of each shard the device ran, in order.
std::vector<std::string> ShardClients(const Engine& engine,
                                      const std::vector<std::shared_ptr<Job>>& jobs) {
  std::vector<ShardInterval> intervals = engine.ShardIntervals(0);
  std::sort(intervals.begin(), intervals.end(),
            [](const ShardInterval& a, const ShardInterval& b) { return a.start < b.start; });
  std::vector<std::string> clients;
  for (const ShardInterval& interval : intervals) {
    for (const auto& job : jobs) {
      if (job->id() == interval.job_id) clients.push_back(job->spec().client);
    }
  }
  return clients;
}

std::vector<JobResult> CollectAll(const std::vector<std::shared_ptr<Job>>& jobs) {
  std::vector<std::future<JobResult>> futures;
  for (const auto& job : jobs) {
    futures.push_back(std::async(std::launch::async, [job] { return Collect(*job); }));
  }
  std::vector<JobResult> results;
  for (auto& f : futures) results.push_back(f.get());
  return results;
}

TEST(FairShareTest, AClientWithOneJobTakesEveryOtherTurnAgainstAClientWithMany) {
  auto engine = SerialEngine();
  std::vector<std::shared_ptr<Job>> jobs;
  for (int k = 0; k < 6; ++k) {
    absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(ShardedJob("a", 20));
    ASSERT_TRUE(job.ok()) << job.status();
    jobs.push_back(*job);
  }
  absl::StatusOr<std::shared_ptr<Job>> b = engine->Submit(ShardedJob("b", 5));
  ASSERT_TRUE(b.ok()) << b.status();
  jobs.push_back(*b);
  for (const JobResult& result : CollectAll(jobs)) EXPECT_TRUE(result.status.ok()) << result.status;

  const std::vector<std::string> clients = ShardClients(*engine, jobs);
  ASSERT_EQ(clients.size(), 6u * 20 + 5);
  const auto first_b = std::find(clients.begin(), clients.end(), "b");
  const auto last_b = std::find(clients.rbegin(), clients.rend(), "b").base() - 1;
  // From b's first shard on, b and a alternate until b is done: b waits for
  // one shard of a, never for a's six jobs in turn.
  ASSERT_NE(first_b, clients.end());
  EXPECT_EQ(last_b - first_b, 2 * (5 - 1));
  for (auto it = first_b; it <= last_b; ++it) {
    EXPECT_EQ(*it, (it - first_b) % 2 == 0 ? "b" : "a") << "shard " << (it - clients.begin());
  }
  // And b's first shard was among the first two after it arrived (a's jobs
  // had run at most a few shards by then).
  EXPECT_LT(first_b - clients.begin(), 12);
}

TEST(FairShareTest, AHigherPriorityGoesFirstWhoeverSentIt) {
  auto engine = SerialEngine();
  std::vector<std::shared_ptr<Job>> jobs;
  for (int k = 0; k < 2; ++k) {
    absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(ShardedJob("a", 20));
    ASSERT_TRUE(job.ok()) << job.status();
    jobs.push_back(*job);
  }
  absl::StatusOr<std::shared_ptr<Job>> urgent = engine->Submit(ShardedJob("b", 5, 10));
  ASSERT_TRUE(urgent.ok()) << urgent.status();
  jobs.push_back(*urgent);
  for (const JobResult& result : CollectAll(jobs)) EXPECT_TRUE(result.status.ok()) << result.status;

  // Once b's urgent job has a shard, it runs to its end before a's jobs go on.
  const std::vector<std::string> clients = ShardClients(*engine, jobs);
  const auto first_b = std::find(clients.begin(), clients.end(), "b");
  ASSERT_LE(first_b + 5, clients.end());
  EXPECT_EQ(std::count(first_b, first_b + 5, "b"), 5);
}

TEST(FairShareTest, JobQuotaRefusesOnlyTheClientOverIt) {
  EngineOptions options;
  options.max_jobs_per_client = 2;
  auto engine = SerialEngine(options);
  std::vector<std::shared_ptr<Job>> jobs;
  for (int k = 0; k < 2; ++k) {
    absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(ShardedJob("a", 20));
    ASSERT_TRUE(job.ok()) << job.status();
    jobs.push_back(*job);
  }
  absl::StatusOr<std::shared_ptr<Job>> third = engine->Submit(ShardedJob("a", 1));
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("client a has 2 jobs"));
  EXPECT_THAT(third.status().message(), HasSubstr("--max-jobs-per-client 2"));
  absl::StatusOr<std::shared_ptr<Job>> b = engine->Submit(ShardedJob("b", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  jobs.push_back(*b);
  for (const JobResult& result : CollectAll(jobs)) EXPECT_TRUE(result.status.ok()) << result.status;
  // Its jobs done, the client is admitted again.
  absl::StatusOr<std::shared_ptr<Job>> again = engine->Submit(ShardedJob("a", 1));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(Collect(**again).status.ok());
}

TEST(FairShareTest, FlopsQuotaCountsTheClientsUnfinishedJobs) {
  const JobSpec probe = ShardedJob("a", 10);
  const double job_flops = 2.0 * probe.paths * probe.market.issuers() * probe.column_end;
  EngineOptions options;
  options.max_pending_flops_per_client = 1.5 * job_flops;
  auto engine = SerialEngine(options);
  absl::StatusOr<std::shared_ptr<Job>> first = engine->Submit(ShardedJob("a", 10));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::shared_ptr<Job>> second = engine->Submit(ShardedJob("a", 10));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(second.status().message(), HasSubstr("client a has"));
  EXPECT_THAT(second.status().message(), HasSubstr("--max-pending-flops-per-client"));
  absl::StatusOr<std::shared_ptr<Job>> b = engine->Submit(ShardedJob("b", 10));
  EXPECT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(Collect(**first).status.ok());
  EXPECT_TRUE(Collect(**b).status.ok());
}

TEST(FairShareTest, CountersSumTheShardsAndFlopsDone) {
  auto engine = SerialEngine();
  const JobResult result = RunJob(*engine, ShardedJob("a", 6));
  ASSERT_TRUE(result.status.ok()) << result.status;
  const DeviceStatus device = engine->DeviceStatuses()[0];
  EXPECT_EQ(device.shards_done, 6);
  EXPECT_EQ(device.shards_failed, 0);
  EXPECT_EQ(device.shards_retried, 0);
  EXPECT_DOUBLE_EQ(device.flops, 2.0 * 4000 * 8 * 6 * kColumnAlignment);
  EXPECT_DOUBLE_EQ(device.flops, result.summary.flops);
  EXPECT_TRUE(result.summary.started);
  EXPECT_GE(result.summary.queued_seconds, 0);
  EXPECT_LE(result.summary.queued_seconds, result.summary.elapsed_seconds);
  EXPECT_EQ(engine->Status().waiting_jobs, 0);
}

}  // namespace
}  // namespace pricer
