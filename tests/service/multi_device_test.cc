// The multi-device scheduler through a real in-process server on cpu
// devices: memory budgets and shards in flight per device, reproducibility
// across device counts and shard widths, concurrent jobs beside a stalled
// reader, refusals before any work, cancellation, deadlines, injected shard
// failures and priorities.
#include <grpcpp/client_context.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backends/cpu/cpu_device.h"
#include "tests/service/service_test_util.h"

namespace pricer::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Every call ends within this, so a scheduling bug fails a test instead of
// hanging it.
constexpr std::chrono::seconds kCallTimeout(60);

// What a cpu device holds for a job (ST, P x N float32) and per running shard
// (an A block N x w and an SC block P x w, float32): the contract of
// CpuDevice::ResidentBytes and ShardBytes.
constexpr int64_t ResidentBytes(int64_t issuers, int64_t paths) { return 4 * issuers * paths; }
constexpr int64_t ShardBytes(int64_t issuers, int64_t paths, int64_t width) {
  return 4 * (issuers + paths) * width;
}

// A Price call read one reply at a time, for readers that stall or cancel.
class Call {
 public:
  Call(v1::Pricer::Stub& stub, const v1::PriceRequest& request,
       std::chrono::milliseconds timeout = kCallTimeout, const std::string& token = "") {
    context_.set_deadline(std::chrono::system_clock::now() + timeout);
    AddToken(&context_, token);
    reader_ = stub.Price(&context_, request);
  }

  // Reads one reply; false at the end of the stream.
  bool Read() {
    v1::PriceReply reply;
    if (!reader_->Read(&reply)) return false;
    call_.replies.push_back(std::move(reply));
    return true;
  }
  // Reads the rest of the stream and its status.
  PriceCall Finish() {
    while (Read()) {
    }
    call_.status = reader_->Finish();
    return std::move(call_);
  }
  void Cancel() { context_.TryCancel(); }
  const std::vector<v1::PriceReply>& replies() const { return call_.replies; }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::PriceReply>> reader_;
  PriceCall call_;
};

PriceCall RunCall(v1::Pricer::Stub& stub, const v1::PriceRequest& request) {
  return Call(stub, request).Finish();
}

const v1::JobAccepted& Accepted(const std::vector<v1::PriceReply>& replies) {
  static const v1::JobAccepted kNone;
  if (replies.empty() || !replies.front().has_accepted()) return kNone;
  return replies.front().accepted();
}

// A request checked against the float64 reference: explicit market, inline
// matrix `a`, full output with statistics and terminal prices.
struct Problem {
  v1::PriceRequest request;
  std::vector<float> a;
};

Problem MakeProblem(int64_t issuers, int64_t paths, int64_t columns, uint64_t seed = 42) {
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

// The original scenario in miniature: 32 issuers, 2000 paths, 3000 columns.
// The planner starts at 3072 columns and halves to 1536, 768, then 256.
constexpr int64_t kIssuers = 32, kPaths = 2000, kColumns = 3000;
constexpr int64_t kResident = ResidentBytes(kIssuers, kPaths);    // 256,000
constexpr int64_t kShard256 = ShardBytes(kIssuers, kPaths, 256);  // 2,080,768
constexpr int64_t kShard768 = ShardBytes(kIssuers, kPaths, 768);  // 6,242,304

// A per-device budget for ST and `shards` shards of 256 columns.
int64_t BudgetFor(double shards) {
  return kResident + static_cast<int64_t>(shards * static_cast<double>(kShard256));
}

Problem ScenarioProblem() { return MakeProblem(kIssuers, kPaths, kColumns); }

// What a call computed, placed by column (NaN outside the priced range).
struct Result {
  std::vector<float> sc;  // P x M, column-major
  std::vector<double> v0, mean, stddev, min, max;
  std::vector<float> st;  // P x N, when terminal prices were asked for
};

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

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b, int64_t first, int64_t count) {
  if (count == 0) return true;
  return static_cast<int64_t>(a.size()) >= first + count &&
         static_cast<int64_t>(b.size()) >= first + count &&
         std::memcmp(a.data() + first, b.data() + first, count * sizeof(T)) == 0;
}

// Bitwise equality of SC, the statistics and ST over columns [begin, end).
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

// Checks each priced column's statistics of a statistics + terminal prices
// call with the inline matrix `a`: the mean against float64,
// mean_j = sum_i A[i, j] * mean_p ST[p, i], V0_j = sum_i A[i, j] * spot_i, and
// min <= mean <= max.
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
                                             EngineOptions engine = {}) {
  ServerOptions options;
  options.devices = devices;
  options.device_memory.bytes = budget_bytes;
  options.engine = engine;
  return StartTestServer(options);
}

std::unique_ptr<PricerServer> StartWithDevices(std::vector<std::unique_ptr<Device>> devices,
                                               EngineOptions engine = {}) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.engine = engine;
  absl::StatusOr<std::unique_ptr<PricerServer>> server =
      PricerServer::Start(options, std::move(devices));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// One call on a fresh server, with the accounting and schedule after it.
struct ServedRun {
  PriceCall call;
  v1::ListDevicesReply devices;
  std::vector<std::vector<ShardInterval>> intervals;  // per device, by start
};

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

// Prices `request` on a fresh server whose cpu devices have these budgets
// and threads ("cpu0", "cpu1", ...).
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

// True when two of the intervals (sorted by start) overlap in time.
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

// The accounting and schedule every single-job run must show: each shard ran
// exactly once on some device, the shards a device reports done are the ones
// it recorded, no peak is over its budget, and all memory is back.
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

// Polls ListDevices until no device holds memory and no job is queued;
// returns the seconds it took (`limit` when it never happened).
double SecondsUntilIdle(v1::Pricer::Stub& stub, double limit = 5.0) {
  const Clock::time_point start = Clock::now();
  while (SecondsSince(start) < limit) {
    const v1::ListDevicesReply reply = ListDevices(stub);
    bool idle = reply.queued_jobs() == 0;
    for (const v1::DeviceInfo& device : reply.devices()) idle = idle && device.bytes_in_use() == 0;
    if (idle) return SecondsSince(start);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return limit;
}

int64_t ShardsDone(const v1::ListDevicesReply& reply) {
  int64_t done = 0;
  for (const v1::DeviceInfo& device : reply.devices()) done += device.shards_done();
  return done;
}

// A full-output job far longer than any test lets run: 200,000 generated
// columns of 2000 paths, about 1.6 GB of SC.
v1::PriceRequest EndlessRequest() {
  v1::PriceRequest request = SmallRequest(/*issuers=*/20, /*paths=*/2000, /*columns=*/200'000);
  request.mutable_output()->set_full(true);
  return request;
}

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

  // The same budget on both devices: the planner keeps the widest shard that
  // fits and runs as many as the rest of the budget holds. From 768 columns
  // (3 x 256) it narrows to 256, so a budget of 2.5 shards holds 2. A cpu
  // device runs at most one shard per thread, so these devices get 2 threads.
  {
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
    ExpectSameResult(Collect(run.call, problem.request), serial, kPaths, 0, kColumns,
                     "2 in flight");
  }

  // Three in flight: the narrowest device sets the width (256 columns), a
  // device with room for 3.5 shards runs 3 at once.
  {
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
    ExpectSameResult(Collect(run.call, problem.request), serial, kPaths, 0, kColumns,
                     "3 in flight");
  }

  // The budget holds 3.5 shards but the device has one thread: one at a time.
  {
    const int64_t large = BudgetFor(3.5);
    const ServedRun run = RunOnCpuDevices(problem.request, {{large, 1}});
    ASSERT_TRUE(run.call.status.ok()) << run.call.status.error_message();
    EXPECT_EQ(Accepted(run.call.replies).plan().device_plans(0).shards_in_flight(), 1);
    EXPECT_FALSE(AnyOverlap(run.intervals[0]));
  }
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
  std::vector<Problem> problems;
  for (int k = 0; k < kJobs; ++k) problems.push_back(MakeProblem(20, 1000, 1200, 1000 + k));
  std::vector<PriceCall> calls(kJobs);
  {
    std::vector<std::thread> clients;
    for (int k = 0; k < kJobs; ++k) {
      clients.emplace_back([&, k] { calls[k] = RunCall(*stub, problems[k].request); });
    }
    for (std::thread& client : clients) client.join();
  }
  for (int k = 0; k < kJobs; ++k) {
    SCOPED_TRACE("job " + std::to_string(k));
    ExpectResultIsProduct(calls[k], problems[k].request, problems[k].a);
  }
  for (int k = 1; k < kJobs; ++k) {
    // Different seeds, different paths.
    EXPECT_NE(Collect(calls[k], problems[k].request).st[0],
              Collect(calls[0], problems[0].request).st[0]);
  }

  // The stalled job holds no more than its bound, and is held there: it
  // cannot reserve another shard's output.
  v1::ListDevicesReply devices = ListDevices(*stub);
  const Clock::time_point start = Clock::now();
  while (devices.pending_bytes() + stalled_shard_output <= engine.max_pending_bytes_per_job &&
         SecondsSince(start) < 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    devices = ListDevices(*stub);
  }
  EXPECT_GT(devices.pending_bytes() + stalled_shard_output, engine.max_pending_bytes_per_job);
  EXPECT_LE(devices.pending_bytes(), engine.max_pending_bytes_per_job);
  EXPECT_LE(devices.pending_bytes(), devices.max_pending_bytes());
  EXPECT_EQ(devices.queued_jobs(), 1);
  // The stalled job is held back: its shards wait for its reader. (A few
  // chunks still drain into gRPC's transport buffers, which frees their
  // bytes, so the count may creep; the job must not run to its end.)
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  devices = ListDevices(*stub);
  EXPECT_LT(ShardsDone(devices) - kJobs, stalled_plan.shard_count())
      << "the stalled job ran to its end without its reader";
  EXPECT_EQ(devices.queued_jobs(), 1);
  EXPECT_LE(devices.pending_bytes(), engine.max_pending_bytes_per_job);

  const PriceCall stalled_result = stalled_call.Finish();
  ExpectResultIsProduct(stalled_result, stalled.request, stalled.a);
  devices = ListDevices(*stub);
  for (const v1::DeviceInfo& device : devices.devices()) {
    EXPECT_LE(device.peak_bytes(), budget) << device.name();
    EXPECT_GT(device.shards_done(), 0) << device.name();
  }
  EXPECT_EQ(devices.pending_bytes(), 0);
}

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
  EXPECT_LT(SecondsUntilIdle(*stub), 1.0);
  const Problem problem = MakeProblem(6, 800, 70);
  ExpectResultIsProduct(RunCall(*stub, problem.request), problem.request, problem.a);
}

// A cancelled job gives its device memory back within a second.
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
  EXPECT_LT(SecondsSince(cancelled), 1.0) << "memory still held after the cancel";
  devices = ListDevices(*stub);
  for (const v1::DeviceInfo& device : devices.devices()) {
    EXPECT_EQ(device.bytes_in_use(), 0) << device.name();
  }
  const int64_t done = ShardsDone(devices);
  EXPECT_LT(done, 98);  // of ceil(200,000 / 2048) shards
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(ShardsDone(ListDevices(*stub)), done) << "shards still run after the cancel";
}

// A deadline stops the job, frees its memory, and the server goes on.
TEST(MultiDevice, DeadlineStopsTheJobAndFreesItsMemory) {
  EngineOptions engine;
  engine.max_pending_bytes_per_job = 32 << 20;
  std::unique_ptr<PricerServer> server = StartCpuServer("cpu:2", 20'000'000, engine);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  const Clock::time_point start = Clock::now();
  const PriceCall call = Call(*stub, EndlessRequest(), std::chrono::milliseconds(300)).Finish();
  const Clock::time_point ended = Clock::now();
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << call.status.error_message();
  EXPECT_GE(SecondsSince(start), 0.29);
  ASSERT_FALSE(call.replies.empty());
  EXPECT_TRUE(call.replies.front().has_accepted());
  EXPECT_FALSE(call.replies.back().has_finished());

  SecondsUntilIdle(*stub);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - ended).count(), 1.0)
      << "memory still held after the deadline";
  const int64_t done = ShardsDone(ListDevices(*stub));
  EXPECT_GT(done, 0);
  EXPECT_LT(done, 98);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(ShardsDone(ListDevices(*stub)), done) << "shards still run after the deadline";

  const Problem problem = MakeProblem(6, 800, 70);
  ExpectResultIsProduct(RunCall(*stub, problem.request), problem.request, problem.a);
}

// Which shard attempts fail, shared by the devices of one server: the shards
// in `shards` of jobs priced with `seed`, on their first `times` attempts,
// whatever the device.
class InjectedFailures {
 public:
  // `lose_device`: each failure is a DeviceLost fault (a broken GPU) rather
  // than a failure of that shard only.
  InjectedFailures(uint64_t seed, std::set<int64_t> shards, int times, bool lose_device = false)
      : seed_(seed), shards_(std::move(shards)), times_(times), lose_device_(lose_device) {}

  absl::Status Failure() const {
    return lose_device_ ? DeviceLost(absl::InternalError("injected fault"))
                        : absl::InternalError("injected failure");
  }

  bool Fail(const JobSpec& spec, const Shard& shard, const std::string& device) {
    if (spec.seed != seed_ || !shards_.contains(shard.index)) return false;
    std::lock_guard lock(mu_);
    if (attempts_[shard.index]++ >= times_) return false;
    failed_.emplace_back(shard.index, device);
    return true;
  }
  // (shard, device) of each injected failure, in order.
  std::vector<std::pair<int64_t, std::string>> failed() const {
    std::lock_guard lock(mu_);
    return failed_;
  }

 private:
  const uint64_t seed_;
  const std::set<int64_t> shards_;
  const int times_;
  const bool lose_device_;
  mutable std::mutex mu_;
  std::map<int64_t, int> attempts_;
  std::vector<std::pair<int64_t, std::string>> failed_;
};

// A real cpu device whose shards fail as `failures` says.
class FlakyCpuDevice : public CpuDevice {
 public:
  FlakyCpuDevice(std::string name, int64_t budget_bytes, std::shared_ptr<InjectedFailures> failures)
      : CpuDevice(std::move(name), budget_bytes, 1), failures_(std::move(failures)) {}

  absl::StatusOr<std::unique_ptr<DeviceJob>> StartJob(const JobSpec& spec,
                                                      int64_t shard_columns) override {
    absl::StatusOr<std::unique_ptr<DeviceJob>> job = CpuDevice::StartJob(spec, shard_columns);
    if (!job.ok()) return job.status();
    return std::make_unique<FlakyJob>(*std::move(job), spec, name(), failures_);
  }

 private:
  class FlakyJob : public DeviceJob {
   public:
    FlakyJob(std::unique_ptr<DeviceJob> job, const JobSpec& spec, std::string device,
             std::shared_ptr<InjectedFailures> failures)
        : job_(std::move(job)),
          spec_(spec),
          device_(std::move(device)),
          failures_(std::move(failures)) {}

    absl::Status RunShard(const Shard& shard, ShardOutput* out) override {
      if (failures_->Fail(spec_, shard, device_)) return failures_->Failure();
      return job_->RunShard(shard, out);
    }
    absl::Status CopyTerminalPrices(int64_t issuer_begin, int64_t issuer_end, float* out) override {
      return job_->CopyTerminalPrices(issuer_begin, issuer_end, out);
    }

   private:
    const std::unique_ptr<DeviceJob> job_;
    const JobSpec& spec_;  // outlives the DeviceJob (device.h)
    const std::string device_;
    const std::shared_ptr<InjectedFailures> failures_;
  };

  const std::shared_ptr<InjectedFailures> failures_;
};

constexpr uint64_t kFlakySeed = 666;

std::unique_ptr<PricerServer> StartFlakyServer(int devices,
                                               std::shared_ptr<InjectedFailures> failures) {
  std::vector<std::unique_ptr<Device>> list;
  for (int d = 0; d < devices; ++d) {
    list.push_back(
        std::make_unique<FlakyCpuDevice>("cpu" + std::to_string(d), BudgetFor(1.5), failures));
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

  EXPECT_LT(SecondsUntilIdle(*stub), 1.0);
  const Problem good = ScenarioProblem();
  ExpectResultIsProduct(RunCall(*stub, good.request), good.request, good.a);
  EXPECT_EQ(failures->failed().size(), 2u);
  EXPECT_LT(SecondsUntilIdle(*stub), 1.0);
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

  EXPECT_LT(SecondsUntilIdle(*stub), 1.0);
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
  EXPECT_LT(SecondsUntilIdle(*stub), 1.0);
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

// A statistics and terminal prices request on an inline matrix, checked by
// ExpectMeansMatch.
Problem StatisticsProblem(int64_t issuers, int64_t paths, int64_t columns, uint64_t seed) {
  Problem problem{SmallRequest(issuers, paths, columns), TestMatrix(issuers, columns)};
  SetInlineMatrix(problem.a, issuers, columns, &problem.request);
  problem.request.set_seed(seed);
  problem.request.mutable_output()->mutable_statistics();  // the basic four
  problem.request.mutable_output()->set_terminal_prices(true);
  return problem;
}

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

  Call low_call(*stub, low.request, kCallTimeout, kTesterToken);
  ASSERT_TRUE(low_call.Read());
  const v1::JobAccepted low_accepted = Accepted(low_call.replies());
  ASSERT_EQ(low_accepted.plan().shard_count(), 20);
  PriceCall low_result;
  Clock::time_point low_done;
  std::thread low_reader([&] {
    low_result = low_call.Finish();
    low_done = Clock::now();
  });
  const PriceCall high_result = Call(*stub, high.request, kCallTimeout, kTesterToken).Finish();
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
  Call first(*stub, jobs[0].request, std::chrono::seconds(10));
  ASSERT_TRUE(first.Read());
  ASSERT_EQ(Accepted(first.replies()).plan().device_plans(0).shards_in_flight(), 1);
  Call second(*stub, jobs[1].request, std::chrono::seconds(10));
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
  while (ListDevices(*stub).devices(0).bytes_in_use() == 0 && SecondsSince(start) < 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  const PriceCall other_result = Call(*stub, other.request, std::chrono::seconds(5)).Finish();
  ExpectResultIsProduct(other_result, other.request, other.a);
  EXPECT_EQ(Accepted(other_result.replies).plan().shard_columns(), 768);

  ExpectResultIsProduct(stalled_call.Finish(), stalled.request, stalled.a);
  const v1::ListDevicesReply devices = ListDevices(*stub);
  EXPECT_LE(devices.devices(0).peak_bytes(), budget);
  EXPECT_EQ(devices.devices(0).bytes_in_use(), 0);
}

}  // namespace
}  // namespace pricer::testing
