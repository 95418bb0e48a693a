// Shared pieces of the multi-device tests (multi_device_*_test.cc): the
// scheduler through a real in-process server on cpu devices. A Price call
// read one reply at a time, requests checked against float64, what a call
// computed placed by column, servers on cpu devices of given budgets, and
// the schedule and accounting a run must show.
#pragma once

#include <grpcpp/client_context.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pricer/v1/pricer.grpc.pb.h"
#include "server/service/pricer_server.h"
#include "tests/service/service_test_util.h"
#include "tests/time_scale.h"

namespace pricer::testing {

// Every call ends within this (times TimeScale()), so a scheduling bug fails
// a test instead of hanging it.
inline constexpr std::chrono::seconds kCallTimeout(60);

// How soon a server is idle again once its jobs have ended (failed,
// cancelled, past their deadline, or their hung shard let go), in seconds
// before TimeScale(): the running shards end at their boundary and give
// their memory back, tens of milliseconds of work.
inline constexpr double kIdleWithinSeconds = 1.0;

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
       std::chrono::milliseconds timeout = Scaled(kCallTimeout), const std::string& token = "") {
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
  // Finish() for a stream too long to hold: keeps only the first reply and
  // the last one read.
  PriceCall FinishKeepingFirstAndLast() {
    while (Read()) {
      if (call_.replies.size() > 2) call_.replies.erase(call_.replies.begin() + 1);
    }
    return Finish();
  }
  void Cancel() { context_.TryCancel(); }
  const std::vector<v1::PriceReply>& replies() const { return call_.replies; }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::PriceReply>> reader_;
  PriceCall call_;
};

PriceCall RunCall(v1::Pricer::Stub& stub, const v1::PriceRequest& request);

// The `accepted` reply that opens `replies` (an empty one when none does).
const v1::JobAccepted& Accepted(const std::vector<v1::PriceReply>& replies);

// A request checked against the float64 reference: explicit market, inline
// matrix `a`, full output with statistics and terminal prices.
struct Problem {
  v1::PriceRequest request;
  std::vector<float> a;
};

Problem MakeProblem(int64_t issuers, int64_t paths, int64_t columns, uint64_t seed = 42);

// A statistics and terminal prices request on an inline matrix, checked by
// ExpectMeansMatch.
Problem StatisticsProblem(int64_t issuers, int64_t paths, int64_t columns, uint64_t seed);

// The original scenario in miniature: 32 issuers, 2000 paths, 3000 columns.
// The planner starts at 3072 columns and halves to 1536, 768, then 256.
inline constexpr int64_t kIssuers = 32, kPaths = 2000, kColumns = 3000;
inline constexpr int64_t kResident = ResidentBytes(kIssuers, kPaths);    // 256,000
inline constexpr int64_t kShard256 = ShardBytes(kIssuers, kPaths, 256);  // 2,080,768
inline constexpr int64_t kShard768 = ShardBytes(kIssuers, kPaths, 768);  // 6,242,304

// A per-device budget for ST and `shards` shards of 256 columns.
int64_t BudgetFor(double shards);

Problem ScenarioProblem();

// What a call computed, placed by column (NaN outside the priced range).
struct Result {
  std::vector<float> sc;  // P x M, column-major
  std::vector<double> v0, mean, stddev, min, max;
  std::vector<float> st;  // P x N, when terminal prices were asked for
};

Result Collect(const PriceCall& call, const v1::PriceRequest& request);

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b, int64_t first, int64_t count) {
  if (count == 0) return true;
  return static_cast<int64_t>(a.size()) >= first + count &&
         static_cast<int64_t>(b.size()) >= first + count &&
         std::memcmp(a.data() + first, b.data() + first, count * sizeof(T)) == 0;
}

// Bitwise equality of SC, the statistics and ST over columns [begin, end).
void ExpectSameResult(const Result& got, const Result& want, int64_t paths, int64_t begin,
                      int64_t end, const std::string& what);

// Checks each priced column's statistics of a statistics + terminal prices
// call with the inline matrix `a`: the mean against float64,
// mean_j = sum_i A[i, j] * mean_p ST[p, i], V0_j = sum_i A[i, j] * spot_i, and
// min <= mean <= max.
void ExpectMeansMatch(const PriceCall& call, const v1::PriceRequest& request,
                      const std::vector<float>& a);

std::unique_ptr<PricerServer> StartCpuServer(const std::string& devices, int64_t budget_bytes,
                                             EngineOptions engine = {});

std::unique_ptr<PricerServer> StartWithDevices(std::vector<std::unique_ptr<Device>> devices,
                                               EngineOptions engine = {});

// One call on a fresh server, with the accounting and schedule after it.
struct ServedRun {
  PriceCall call;
  v1::ListDevicesReply devices;
  std::vector<std::vector<ShardInterval>> intervals;  // per device, by start
};

ServedRun RunOn(PricerServer& server, const v1::PriceRequest& request);

// Prices `request` on a fresh server whose cpu devices have these budgets
// and threads ("cpu0", "cpu1", ...).
ServedRun RunOnCpuDevices(const v1::PriceRequest& request,
                          const std::vector<std::pair<int64_t, int>>& budgets_and_threads);

// True when two of the intervals (sorted by start) overlap in time.
bool AnyOverlap(const std::vector<ShardInterval>& intervals);

// The accounting and schedule every single-job run must show: each shard ran
// exactly once on some device, the shards a device reports done are the ones
// it recorded, no peak is over its budget, and all memory is back.
void ExpectScheduleAccounted(const ServedRun& run, const std::vector<int64_t>& budgets);

// Polls ListDevices until no device holds memory and no job is queued;
// returns the seconds it took (`limit` times TimeScale() when it never
// happened).
double SecondsUntilIdle(v1::Pricer::Stub& stub, double limit = 5.0);

int64_t ShardsDone(const v1::ListDevicesReply& reply);

// A full-output job far longer than any test lets run: 200,000 generated
// columns of 2000 paths, about 1.6 GB of SC.
v1::PriceRequest EndlessRequest();

}  // namespace pricer::testing
