// Helpers for tests that drive the engine with the real cpu backend the way
// the gRPC reactor does: Submit, then Pop chunks and Release their bytes
// until the stream is drained.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "server/model/job_spec.h"
#include "server/model/statistics.h"
#include "server/scheduler/engine.h"

namespace pricer {

inline constexpr int64_t kBudget = int64_t{1} << 30;
inline constexpr double kFloatEpsilon = 1.0 / 16777216.0;  // 2^-24, unit roundoff of float32

// `devices` cpu devices named cpu0, cpu1, ..., each of `threads` threads.
std::unique_ptr<Engine> MakeEngine(int64_t budget = kBudget, int devices = 1, int threads = 2,
                                   EngineOptions options = {});

// `statistics`: the basic selection (V0, mean, stddev, min, max) or none.
OutputSelection Output(bool full, bool statistics, bool terminal_prices, int64_t chunk_columns = 0);

Market MakeMarket(std::vector<double> spot, std::vector<double> volatility, double rate,
                  double maturity);

// All columns of `scenarios`.
JobSpec MakeSpec(Market market, int64_t paths, uint64_t seed, ScenarioMatrix scenarios,
                 OutputSelection output, int64_t shard_columns = 0);

// Everything one job sent, put back together.
struct JobResult {
  absl::Status status = absl::UnknownError("not drained");
  int64_t paths = 0;
  int64_t column_begin = 0;
  int64_t column_end = 0;
  std::vector<float> sc;  // P x (column_end - column_begin), column-major
  // The selected statistics of columns [column_begin, column_end), by offset.
  ColumnStatistics statistics;
  std::vector<float> st;  // P x N, column-major
  std::vector<float> v;   // a book's values, P x K, column-major
  int64_t chunks = 0;
  JobSummary summary;  // once drained

  float Sc(int64_t p, int64_t j) const {
    return sc[static_cast<size_t>((j - column_begin) * paths + p)];
  }
  float St(int64_t p, int64_t i) const { return st[static_cast<size_t>(i * paths + p)]; }
  // SC[:, j] and ST[:, i].
  std::vector<float> ScColumn(int64_t j) const;
  std::vector<float> StColumn(int64_t i) const;
};

// Pops every chunk of `job` until its stream is drained, releasing each one
// as the reactor does, and checks each chunk's shape and that the chunks
// tile the requested columns, issuers and instruments exactly once. Fails the test and
// cancels the job after `timeout` (times TimeScale()).
JobResult Collect(Job& job, std::chrono::seconds timeout = std::chrono::seconds(60));

// Submits `spec` (expecting it to be admitted) and collects its result.
JobResult RunJob(Engine& engine, JobSpec spec);

// V0[j] = sum_i A[i, j] X0[i] in float64 over the job's float32 positions,
// summed in row order as the backends do; X0 is `today` (the test's own
// values today of A's rows) or, when empty, the spots S0.
double ReferenceV0(const JobSpec& spec, int64_t j, const std::vector<double>& today = {});

// Every selected statistic of `result` against its recomputation from the
// full SC of the same job (full output and statistics requested together):
// V0, min, max, quantiles and VaR exactly, mean, stddev and ES to ~1e-12
// relative (tests/model/statistics_reference.h).
// `today`: as for ReferenceV0.
void ExpectStatisticsOfFullResult(const JobResult& result, const JobSpec& spec,
                                  const std::vector<double>& today = {});

}  // namespace pricer
