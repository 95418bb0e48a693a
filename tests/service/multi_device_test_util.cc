#include "tests/service/multi_device_test_util.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <thread>

#include "gtest/gtest.h"
#include "server/backends/cpu/cpu_device.h"

namespace pricer::testing {

PriceCall RunCall(v1::Pricer::Stub& stub, const v1::PriceRequest& request) {
  return Call(stub, request).Finish();
}

const v1::JobAccepted& Accepted(const std::vector<v1::PriceReply>& replies) {
  static const v1::JobAccepted kNone;
  if (replies.empty() || !replies.front().has_accepted()) return kNone;
  return replies.front().accepted();
}

Problem MakeProblem(int64_t issuers, int64_t paths, int64_t columns, uint64_t seed) {
  Problem problem{SmallRequest(issuers, paths, columns), TestMatrix(issuers, columns)};
  SetInlineMatrix(problem.a, issuers, columns, &problem.request);
  problem.request.set_seed(seed);
  v1::OutputOptions* output = problem.request.mutable_output();
  output->set_full(true);
  output->mutable_statistics();  // the basic four
  output->set_terminal_prices(true);
  output->set_chunk_columns(100);
  return problem;
}

Problem StatisticsProblem(int64_t issuers, int64_t paths, int64_t columns, uint64_t seed) {
  Problem problem{SmallRequest(issuers, paths, columns), TestMatrix(issuers, columns)};
  SetInlineMatrix(problem.a, issuers, columns, &problem.request);
  problem.request.set_seed(seed);
  problem.request.mutable_output()->mutable_statistics();  // the basic four
  problem.request.mutable_output()->set_terminal_prices(true);
  return problem;
}

int64_t BudgetFor(double shards) {
  return kResident + static_cast<int64_t>(shards * static_cast<double>(kShard256));
}

Problem ScenarioProblem() { return MakeProblem(kIssuers, kPaths, kColumns); }

Result Collect(const PriceCall& call, const v1::PriceRequest& request) {
  const int64_t paths = request.paths();
  const int64_t columns = request.scenarios().has_matrix()
                              ? request.scenarios().matrix().columns()
                              : request.scenarios().generated().columns();
  const int64_t begin = request.column_begin();
  const int64_t end = request.column_end() == 0 ? columns : request.column_end();
  Result result;
  if (request.output().full()) result.sc = AssembleResult(call, paths, columns, begin, end);
  for (std::vector<double>* v :
       {&result.v0, &result.mean, &result.stddev, &result.min, &result.max}) {
    v->assign(static_cast<size_t>(columns), std::nan(""));
  }
  for (const v1::PriceReply& reply : call.replies) {
    if (!reply.has_chunk()) continue;
    const v1::ResultChunk& chunk = reply.chunk();
    const v1::ColumnStatistics& s = chunk.statistics();
    for (int64_t j = chunk.column_begin(); j < chunk.column_end(); ++j) {
      const int k = static_cast<int>(j - chunk.column_begin());
      if (k >= s.mean_size() || k >= s.v0_size() || j < 0 || j >= columns) continue;
      result.v0[j] = s.v0(k);
      result.mean[j] = s.mean(k);
      result.stddev[j] = s.stddev(k);
      result.min[j] = s.min(k);
      result.max[j] = s.max(k);
    }
  }
  if (request.output().terminal_prices()) {
    const int64_t issuers = request.market().has_explicit_()
                                ? request.market().explicit_().spot_size()
                                : request.market().generated().issuers();
    result.st = AssembleTerminalPrices(call, paths, issuers);
  }
  return result;
}

void ExpectSameResult(const Result& got, const Result& want, int64_t paths, int64_t begin,
                      int64_t end, const std::string& what) {
  EXPECT_TRUE(SameBits(got.sc, want.sc, begin * paths, (end - begin) * paths)) << what << ": SC";
  EXPECT_TRUE(SameBits(got.v0, want.v0, begin, end - begin)) << what << ": v0";
  EXPECT_TRUE(SameBits(got.mean, want.mean, begin, end - begin)) << what << ": mean";
  EXPECT_TRUE(SameBits(got.stddev, want.stddev, begin, end - begin)) << what << ": stddev";
  EXPECT_TRUE(SameBits(got.min, want.min, begin, end - begin)) << what << ": min";
  EXPECT_TRUE(SameBits(got.max, want.max, begin, end - begin)) << what << ": max";
  EXPECT_EQ(got.st.size(), want.st.size()) << what << ": ST";
  EXPECT_TRUE(SameBits(got.st, want.st, 0, static_cast<int64_t>(want.st.size()))) << what << ": ST";
}

void ExpectMeansMatch(const PriceCall& call, const v1::PriceRequest& request,
                      const std::vector<float>& a) {
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  const Result result = Collect(call, request);
  const int64_t issuers = request.market().explicit_().spot_size();
  const int64_t paths = request.paths();
  const int64_t columns = request.scenarios().matrix().columns();
  std::vector<double> st_mean(static_cast<size_t>(issuers), 0.0);
  for (int64_t i = 0; i < issuers; ++i) {
    for (int64_t p = 0; p < paths; ++p) st_mean[i] += result.st[i * paths + p];
    st_mean[i] /= static_cast<double>(paths);
  }
  int64_t mismatches = 0;
  for (int64_t j = 0; j < columns; ++j) {
    double exact = 0, v0 = 0;
    for (int64_t i = 0; i < issuers; ++i) {
      exact += a[j * issuers + i] * st_mean[i];
      v0 += a[j * issuers + i] * request.market().explicit_().spot(i);
    }
    const bool ok = std::abs(result.mean[j] - exact) <= 1e-5 * std::abs(exact) &&
                    std::abs(result.v0[j] - v0) <= 1e-12 * std::abs(v0) &&
                    result.min[j] <= result.mean[j] && result.mean[j] <= result.max[j] &&
                    result.stddev[j] > 0;
    if (!ok && mismatches++ < 5) {
      ADD_FAILURE() << "column " << j << ": mean " << result.mean[j] << ", float64 " << exact
                    << ", min " << result.min[j] << ", max " << result.max[j] << ", v0 "
                    << result.v0[j] << ", float64 " << v0;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

std::unique_ptr<PricerServer> StartCpuServer(const std::string& devices, int64_t budget_bytes,
                                             EngineOptions engine) {
  ServerOptions options;
  options.devices = devices;
  options.device_memory.bytes = budget_bytes;
  options.engine = engine;
  return StartTestServer(options);
}

std::unique_ptr<PricerServer> StartWithDevices(std::vector<std::unique_ptr<Device>> devices,
                                               EngineOptions engine) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.engine = engine;
  absl::StatusOr<std::unique_ptr<PricerServer>> server =
      PricerServer::Start(options, std::move(devices));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

ServedRun RunOn(PricerServer& server, const v1::PriceRequest& request) {
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(server);
  ServedRun run;
  run.call = RunCall(*stub, request);
  run.devices = ListDevices(*stub);
  for (int d = 0; d < run.devices.devices_size(); ++d) {
    std::vector<ShardInterval> intervals = server.engine().ShardIntervals(d);
    std::sort(intervals.begin(), intervals.end(),
              [](const ShardInterval& a, const ShardInterval& b) { return a.start < b.start; });
    run.intervals.push_back(std::move(intervals));
  }
  return run;
}

ServedRun RunOnCpuDevices(const v1::PriceRequest& request,
                          const std::vector<std::pair<int64_t, int>>& budgets_and_threads) {
  std::vector<std::unique_ptr<Device>> devices;
  for (size_t d = 0; d < budgets_and_threads.size(); ++d) {
    const auto [budget, threads] = budgets_and_threads[d];
    devices.push_back(std::make_unique<CpuDevice>("cpu" + std::to_string(d), budget, threads));
  }
  std::unique_ptr<PricerServer> server = StartWithDevices(std::move(devices));
  if (server == nullptr) {
    ADD_FAILURE() << "the server did not start";
    return {};
  }
  return RunOn(*server, request);
}

bool AnyOverlap(const std::vector<ShardInterval>& intervals) {
  for (size_t k = 1; k < intervals.size(); ++k) {
    Clock::time_point latest_end = intervals[0].end;
    for (size_t before = 1; before < k; ++before) {
      latest_end = std::max(latest_end, intervals[before].end);
    }
    if (intervals[k].start < latest_end) return true;
  }
  return false;
}

void ExpectScheduleAccounted(const ServedRun& run, const std::vector<int64_t>& budgets) {
  const v1::Plan& plan = Accepted(run.call.replies).plan();
  ASSERT_EQ(run.devices.devices_size(), static_cast<int>(budgets.size()));
  std::map<int64_t, int> runs_of_shard;
  for (int d = 0; d < run.devices.devices_size(); ++d) {
    const v1::DeviceInfo& info = run.devices.devices(d);
    EXPECT_EQ(info.memory_budget_bytes(), budgets[d]) << info.name();
    EXPECT_LE(info.peak_bytes(), info.memory_budget_bytes()) << info.name();
    EXPECT_EQ(info.bytes_in_use(), 0) << info.name();
    EXPECT_EQ(info.shards_done(), static_cast<int64_t>(run.intervals[d].size())) << info.name();
    for (const ShardInterval& interval : run.intervals[d]) {
      EXPECT_LE(interval.start, interval.end);
      ++runs_of_shard[interval.shard];
    }
  }
  ASSERT_EQ(static_cast<int64_t>(runs_of_shard.size()), plan.shard_count());
  for (const auto& [shard, runs] : runs_of_shard) {
    EXPECT_GE(shard, 0);
    EXPECT_LT(shard, plan.shard_count());
    EXPECT_EQ(runs, 1) << "shard " << shard;
  }
}

double SecondsUntilIdle(v1::Pricer::Stub& stub, double limit) {
  const double scaled_limit = limit * TimeScale();
  const Clock::time_point start = Clock::now();
  while (SecondsSince(start) < scaled_limit) {
    const v1::ListDevicesReply reply = ListDevices(stub);
    bool idle = reply.queued_jobs() == 0;
    for (const v1::DeviceInfo& device : reply.devices()) idle = idle && device.bytes_in_use() == 0;
    if (idle) return SecondsSince(start);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return scaled_limit;
}

int64_t ShardsDone(const v1::ListDevicesReply& reply) {
  int64_t done = 0;
  for (const v1::DeviceInfo& device : reply.devices()) done += device.shards_done();
  return done;
}

v1::PriceRequest EndlessRequest() {
  v1::PriceRequest request = SmallRequest(/*issuers=*/20, /*paths=*/2000, /*columns=*/200'000);
  request.mutable_output()->set_full(true);
  return request;
}

}  // namespace pricer::testing
