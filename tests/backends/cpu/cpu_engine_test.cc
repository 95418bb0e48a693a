// The engine with the real cpu backend (OpenBLAS), driven the way the gRPC
// reactor drives it: Submit, then Pop chunks and Release their bytes until the
// stream is drained. Every number is checked against a float64 recomputation
// or a closed form.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/backends/cpu/cpu_device.h"
#include "server/model/correlation.h"
#include "server/model/counter_rng.h"
#include "server/scheduler/engine.h"
#include "server/scheduler/shard_planner.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

// N issuers with spots in [5, 10) and volatilities in [0, 1).
Market SpreadMarket(int64_t issuers) {
  Market market = MakeMarket({}, {}, 0.02, 1.0);
  for (int64_t i = 0; i < issuers; ++i) {
    market.spot.push_back(5.0 + 5.0 * static_cast<double>(i) / static_cast<double>(issuers));
    market.volatility.push_back(static_cast<double>((i * 37) % issuers) /
                                static_cast<double>(issuers));
  }
  return market;
}

// Waits up to a second for the device's bytes in use to return to zero.
int64_t BytesInUseAfterASecond(const Engine& engine, size_t device = 0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (engine.DeviceStatuses()[device].bytes_in_use != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return engine.DeviceStatuses()[device].bytes_in_use;
}

// The documented uniform (floor(x / 2^9) + 0.5) / 2^23.
double ReferenceUniform(uint32_t x) { return (std::floor(x / 512.0) + 0.5) / 8388608.0; }

// A[i, j] of a generated scenario matrix, recomputed from the Philox words:
// word i % 4 of counter (i / 4, j low, j high, stream 3), key = seed.
double ReferenceScenario(uint64_t seed, int64_t i, int64_t j, double low, double high) {
  const PhiloxCounter counter{{static_cast<uint32_t>(i / 4), static_cast<uint32_t>(j),
                               static_cast<uint32_t>(static_cast<uint64_t>(j) >> 32), 3u}};
  const PhiloxCounter w = Philox4x32_10(counter, KeyFromSeed(seed));
  return low + (high - low) * ReferenceUniform(w.v[i % 4]);
}

// z[p, i] recomputed in double by Box-Muller from the Philox words of counter
// (i / 4, p low, p high, stream 0).
double ReferenceShock(uint64_t seed, int64_t p, int64_t i) {
  const PhiloxCounter counter{{static_cast<uint32_t>(i / 4), static_cast<uint32_t>(p),
                               static_cast<uint32_t>(static_cast<uint64_t>(p) >> 32), 0u}};
  const PhiloxCounter w = Philox4x32_10(counter, KeyFromSeed(seed));
  const int pair = static_cast<int>(i % 4) / 2;
  const double radius = std::sqrt(-2.0 * std::log(ReferenceUniform(w.v[2 * pair])));
  const double angle = 2.0 * std::numbers::pi * ReferenceUniform(w.v[2 * pair + 1]);
  return i % 2 == 0 ? radius * std::cos(angle) : radius * std::sin(angle);
}

// A as a dense N x M float64 matrix (column-major): inline values or the
// generated ones recomputed independently.
using Dense = std::vector<double>;

// SC must equal the float64 product of the returned ST and A up to the
// rounding of a float32 dot product of K terms, |error| <= ~K u sum |ST||A|
// (any summation order); 2 (K + 2) u leaves room for the rounding of A.
void ExpectProductMatches(const JobResult& result, const Dense& a, int64_t issuers) {
  ASSERT_FALSE(result.sc.empty());
  ASSERT_FALSE(result.st.empty());
  const double tolerance_factor = 2.0 * static_cast<double>(issuers + 2) * kFloatEpsilon;
  int64_t failures = 0;
  for (int64_t j = result.column_begin; j < result.column_end; ++j) {
    for (int64_t p = 0; p < result.paths; ++p) {
      double exact = 0, magnitude = 0;
      for (int64_t i = 0; i < issuers; ++i) {
        const double term = static_cast<double>(result.St(p, i)) * a[i + j * issuers];
        exact += term;
        magnitude += std::fabs(term);
      }
      const double error = std::fabs(result.Sc(p, j) - exact);
      if (!(error <= tolerance_factor * magnitude) && failures++ < 5) {
        ADD_FAILURE() << "SC[" << p << ", " << j << "] = " << result.Sc(p, j) << ", float64 "
                      << exact << ", error " << error << " > " << tolerance_factor * magnitude;
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// Bitwise comparison of two runs over the columns `b` holds.
void ExpectSameBits(const JobResult& a, const JobResult& b, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(b.status.ok()) << b.status;
  ASSERT_EQ(a.paths, b.paths);
  ASSERT_LE(a.column_begin, b.column_begin);
  ASSERT_GE(a.column_end, b.column_end);
  int64_t mismatches = 0;
  for (int64_t j = b.column_begin; j < b.column_end; ++j) {
    for (int64_t p = 0; p < b.paths; ++p) {
      if (a.Sc(p, j) != b.Sc(p, j) && mismatches++ < 3) {
        ADD_FAILURE() << "SC[" << p << ", " << j << "]: " << a.Sc(p, j) << " vs " << b.Sc(p, j);
      }
    }
    const size_t ja = static_cast<size_t>(j - a.column_begin);
    const size_t jb = static_cast<size_t>(j - b.column_begin);
    EXPECT_EQ(a.statistics.v0[ja], b.statistics.v0[jb]) << "column " << j;
    EXPECT_EQ(a.statistics.mean[ja], b.statistics.mean[jb]) << "column " << j;
    EXPECT_EQ(a.statistics.stddev[ja], b.statistics.stddev[jb]) << "column " << j;
    EXPECT_EQ(a.statistics.min[ja], b.statistics.min[jb]) << "column " << j;
    EXPECT_EQ(a.statistics.max[ja], b.statistics.max[jb]) << "column " << j;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(CpuEngineTest, TerminalPricesFollowTheLognormalLaw) {
  const int64_t paths = 200000;
  const double rate = 0.02, maturity = 1.5;
  const std::vector<double> spot = {7.0, 5.0, 10.0, 8.5, 6.0, 100.0};
  const std::vector<double> sigma = {0.0, 0.05, 0.2, 0.5, 0.8, 0.3};
  const int64_t issuers = static_cast<int64_t>(spot.size());
  const uint64_t seed = 42;
  auto engine = MakeEngine();
  const JobResult result =
      RunJob(*engine, MakeSpec(MakeMarket(spot, sigma, rate, maturity), paths, seed,
                               ScenarioMatrix::Generated(issuers, 16, 7, 0.0f, 1.0f),
                               Output(true, false, true)));
  ASSERT_TRUE(result.status.ok()) << result.status;

  for (int64_t i = 0; i < issuers; ++i) {
    SCOPED_TRACE("issuer " + std::to_string(i) + " sigma " + std::to_string(sigma[i]));
    const double s0 = spot[i], s2t = sigma[i] * sigma[i] * maturity;
    const double forward = s0 * std::exp(rate * maturity);
    if (sigma[i] == 0.0) {
      // No diffusion: every path is the forward, to float32 rounding of exp.
      for (int64_t p = 0; p < paths; ++p) ASSERT_EQ(result.St(p, i), result.St(0, i)) << p;
      EXPECT_NEAR(result.St(0, i), forward, 4 * kFloatEpsilon * forward);
      continue;
    }
    // Path by path: S0 exp((r - sigma^2/2) T + sigma sqrt(T) z), z from the
    // documented mapping; float32 exp and z leave a few 1e-7 relative.
    for (int64_t p = 0; p < paths; p += 997) {
      const double z = ReferenceShock(seed, p, i);
      const double expected = s0 * std::exp((rate - 0.5 * sigma[i] * sigma[i]) * maturity +
                                            sigma[i] * std::sqrt(maturity) * z);
      ASSERT_NEAR(result.St(p, i), expected, 1e-5 * expected) << "path " << p;
    }
    // The law: E = S0 e^{rT}, Var = S0^2 e^{2rT} (e^{sigma^2 T} - 1); the
    // standard error of the sample variance uses the lognormal fourth central
    // moment, Var^2 (e^{4 s} + 2 e^{3 s} + 3 e^{2 s} - 3) with s = sigma^2 T.
    double sum = 0;
    for (int64_t p = 0; p < paths; ++p) sum += result.St(p, i);
    const double mean = sum / static_cast<double>(paths);
    double squares = 0;
    for (int64_t p = 0; p < paths; ++p) squares += std::pow(result.St(p, i) - mean, 2);
    const double variance = squares / static_cast<double>(paths - 1);
    const double expected_variance = forward * forward * std::expm1(s2t);
    const double kurtosis = std::exp(4 * s2t) + 2 * std::exp(3 * s2t) + 3 * std::exp(2 * s2t) - 3;
    const double n = static_cast<double>(paths);
    EXPECT_NEAR(mean, forward, 5 * std::sqrt(expected_variance / n));
    EXPECT_NEAR(variance, expected_variance, 5 * expected_variance * std::sqrt((kurtosis - 1) / n));
  }
}

TEST(CpuEngineTest, ScenarioColumnsAreTheProductOfPricesAndInlineScenarios) {
  const int64_t paths = 4000, issuers = 7, columns = 300;
  std::mt19937_64 generator(3);
  std::uniform_real_distribution<float> position(-1.0f, 1.0f);
  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(issuers * columns));
  for (float& v : *values) v = position(generator);
  // A column of zeros and a column holding one issuer only.
  for (int64_t i = 0; i < issuers; ++i) {
    (*values)[static_cast<size_t>(i + 5 * issuers)] = 0.0f;
    (*values)[static_cast<size_t>(i + 6 * issuers)] = i == 3 ? 1.0f : 0.0f;
  }
  const Dense a(values->begin(), values->end());
  auto engine = MakeEngine();
  const JobResult result =
      RunJob(*engine, MakeSpec(SpreadMarket(issuers), paths, 11,
                               ScenarioMatrix::Inline(issuers, columns, values),
                               Output(true, true, true), /*shard_columns=*/64));
  ASSERT_TRUE(result.status.ok()) << result.status;
  ExpectProductMatches(result, a, issuers);
  for (int64_t p = 0; p < paths; ++p) {
    ASSERT_EQ(result.Sc(p, 5), 0.0f);
    ASSERT_EQ(result.Sc(p, 6), result.St(p, 3));
  }
}

// The N x M scenario matrix of ScenarioMatrix::Generated, recomputed.
Dense ReferenceScenarios(uint64_t seed, int64_t issuers, int64_t columns, double low, double high) {
  Dense a(static_cast<size_t>(issuers * columns));
  for (int64_t j = 0; j < columns; ++j) {
    for (int64_t i = 0; i < issuers; ++i) {
      a[static_cast<size_t>(i + j * issuers)] = ReferenceScenario(seed, i, j, low, high);
    }
  }
  return a;
}

// The reproducibility case: M not a multiple of the alignment.
constexpr int64_t kPaths = 3000, kIssuers = 50, kColumns = 1000;
constexpr uint64_t kSeed = 42, kScenarioSeed = 99;

JobSpec ReproducibilitySpec(int64_t shard_columns, int64_t chunk_columns) {
  return MakeSpec(SpreadMarket(kIssuers), kPaths, kSeed,
                  ScenarioMatrix::Generated(kIssuers, kColumns, kScenarioSeed, 0.0f, 1.0f),
                  Output(true, true, true, chunk_columns), shard_columns);
}

TEST(CpuEngineTest, ScenarioColumnsAreTheProductOfPricesAndGeneratedScenarios) {
  auto engine = MakeEngine();
  const JobResult result = RunJob(*engine, ReproducibilitySpec(0, 0));
  ASSERT_TRUE(result.status.ok()) << result.status;
  ExpectProductMatches(result, ReferenceScenarios(kScenarioSeed, kIssuers, kColumns, 0.0, 1.0),
                       kIssuers);
}

TEST(CpuEngineTest, StatisticsEqualFloat64StatisticsOfTheFullResult) {
  auto engine = MakeEngine();
  const JobSpec spec = ReproducibilitySpec(192, 100);
  const JobResult result = RunJob(*engine, spec);
  ASSERT_TRUE(result.status.ok()) << result.status;
  ExpectStatisticsOfFullResult(result, spec);
}

TEST(CpuEngineTest, ResultsDoNotDependOnShardWidthChunkSizeOrColumnRange) {
  auto engine = MakeEngine();
  const JobResult baseline = RunJob(*engine, ReproducibilitySpec(0, 0));
  ASSERT_TRUE(baseline.status.ok()) << baseline.status;
  for (const int64_t shard_columns : {int64_t{64}, int64_t{192}, int64_t{1000}, int64_t{0}}) {
    for (const int64_t chunk_columns : {int64_t{7}, int64_t{100}}) {
      const JobResult run = RunJob(*engine, ReproducibilitySpec(shard_columns, chunk_columns));
      ExpectSameBits(baseline, run,
                     "shard_columns " + std::to_string(shard_columns) + " chunk_columns " +
                         std::to_string(chunk_columns));
      ASSERT_EQ(run.st, baseline.st);
    }
  }
  for (const int64_t shard_columns : {int64_t{64}, int64_t{0}}) {
    JobSpec spec = ReproducibilitySpec(shard_columns, 7);
    spec.column_begin = 130;
    spec.column_end = 777;
    const JobResult run = RunJob(*engine, std::move(spec));
    ExpectSameBits(baseline, run,
                   "columns [130, 777) shard_columns " + std::to_string(shard_columns));
  }
}

TEST(CpuEngineTest, ResultsDoNotDependOnDevicesOrThreads) {
  auto reference_engine = MakeEngine(kBudget, 1, 2);
  const JobResult baseline = RunJob(*reference_engine, ReproducibilitySpec(256, 0));
  ASSERT_TRUE(baseline.status.ok()) << baseline.status;
  struct Layout {
    int devices, threads;
  };
  for (const Layout layout : {Layout{1, 1}, Layout{2, 1}, Layout{3, 2}}) {
    auto engine = MakeEngine(kBudget, layout.devices, layout.threads);
    const JobResult run = RunJob(*engine, ReproducibilitySpec(256, 0));
    ExpectSameBits(baseline, run,
                   std::to_string(layout.devices) + " devices of " +
                       std::to_string(layout.threads) + " threads");
    ASSERT_EQ(run.st, baseline.st);
  }
}

TEST(CpuEngineTest, CorrelatedAntitheticResultsDoNotDependOnDevicesThreadsOrShards) {
  // The correlated shocks come from one fixed-shape GEMM per 256-path block:
  // P = 3001 ends on a partial block and on an antithetic path without a
  // partner.
  std::vector<double> correlation(static_cast<size_t>(kIssuers * kIssuers));
  for (int64_t i = 0; i < kIssuers; ++i) {
    for (int64_t j = 0; j < kIssuers; ++j) {
      correlation[static_cast<size_t>(i * kIssuers + j)] =
          std::pow(0.7, static_cast<double>(std::abs(i - j)));
    }
  }
  absl::StatusOr<std::vector<float>> factor = CholeskyFactor(correlation, kIssuers);
  ASSERT_TRUE(factor.ok()) << factor.status();
  auto spec = [&](int64_t shard_columns) {
    JobSpec s = ReproducibilitySpec(shard_columns, 0);
    s.paths = 3001;
    s.market.correlation_factor = *factor;
    s.antithetic = true;
    return s;
  };
  auto reference_engine = MakeEngine(kBudget, 1, 2);
  const JobResult baseline = RunJob(*reference_engine, spec(256));
  ASSERT_TRUE(baseline.status.ok()) << baseline.status;
  ExpectProductMatches(baseline, ReferenceScenarios(kScenarioSeed, kIssuers, kColumns, 0.0, 1.0),
                       kIssuers);
  EXPECT_LE(reference_engine->DeviceStatuses()[0].peak_bytes, kBudget);
  EXPECT_EQ(BytesInUseAfterASecond(*reference_engine), 0);
  struct Layout {
    int devices, threads;
    int64_t shard_columns;
  };
  for (const Layout layout : {Layout{1, 1, 256}, Layout{2, 1, 512}, Layout{3, 2, 0}}) {
    auto engine = MakeEngine(kBudget, layout.devices, layout.threads);
    const JobResult run = RunJob(*engine, spec(layout.shard_columns));
    ExpectSameBits(baseline, run,
                   std::to_string(layout.devices) + " devices of " +
                       std::to_string(layout.threads) + " threads, shard_columns " +
                       std::to_string(layout.shard_columns));
    ASSERT_EQ(run.st, baseline.st);
  }
}

TEST(CpuEngineTest, ChunksRespectThePayloadLimitAndTileTheRange) {
  // 1.2 MB per column: the payload limit splits both the 44 columns and the
  // 8 issuers into several chunks.
  const int64_t paths = 300000, issuers = 8, columns = 50;
  JobSpec spec = MakeSpec(SpreadMarket(issuers), paths, 5,
                          ScenarioMatrix::Generated(issuers, columns, 6, 0.0f, 1.0f),
                          Output(true, true, true));
  spec.column_begin = 3;
  spec.column_end = 47;
  auto engine = MakeEngine();
  // Collect checks every chunk's payload, shape and the tiling.
  const JobResult result = RunJob(*engine, std::move(spec));
  ASSERT_TRUE(result.status.ok()) << result.status;
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t columns_per_chunk = kMaxChunkPayloadBytes / (paths * 4 + 5 * 8);
  const int64_t issuers_per_chunk = kMaxChunkPayloadBytes / (paths * 4);
  EXPECT_GE(result.chunks, ceil_div(44, columns_per_chunk) + ceil_div(issuers, issuers_per_chunk));
}

TEST(CpuEngineTest, TerminalPricesOnlyJobSendsTheSamePrices) {
  auto engine = MakeEngine();
  const JobResult full = RunJob(*engine, ReproducibilitySpec(0, 0));
  JobSpec spec = ReproducibilitySpec(0, 0);
  spec.output = Output(false, false, true);
  const JobResult prices = RunJob(*engine, std::move(spec));
  ASSERT_TRUE(prices.status.ok()) << prices.status;
  EXPECT_TRUE(prices.sc.empty());
  EXPECT_EQ(prices.st, full.st);
}

TEST(CpuEngineTest, DeviceMemoryReturnsToZeroAndThePeakFitsTheBudget) {
  auto engine = MakeEngine();
  const JobResult result = RunJob(*engine, ReproducibilitySpec(192, 0));
  ASSERT_TRUE(result.status.ok()) << result.status;
  const DeviceStatus status = engine->DeviceStatuses()[0];
  EXPECT_EQ(status.name, "cpu0");
  EXPECT_EQ(status.kind, "cpu");
  EXPECT_EQ(status.bytes_in_use, 0);
  // At least ST and the SC block of one shard were resident at once.
  const int64_t st_bytes = kPaths * kIssuers * 4;
  EXPECT_GE(status.peak_bytes, st_bytes + kPaths * std::min(kColumnAlignment, kColumns) * 4);
  EXPECT_LE(status.peak_bytes, status.memory_budget_bytes);
  EXPECT_EQ(status.memory_budget_bytes, kBudget);
  EXPECT_GT(status.shards_done, 0);
}

TEST(CpuEngineTest, DeadlineStopsAJobAtAShardBoundaryAndFreesItsMemory) {
  // A job far longer than its deadline, whose reader keeps reading: only the
  // engine's own deadline check can stop it.
  auto engine = MakeEngine(kBudget, 1, 2);
  const int64_t paths = 20000, issuers = 50;
  const int64_t columns = 400 * kColumnAlignment;
  JobSpec spec = MakeSpec(SpreadMarket(issuers), paths, 1,
                          ScenarioMatrix::Generated(issuers, columns, 2, 0.0f, 1.0f),
                          Output(false, true, false), kColumnAlignment);
  const auto start = std::chrono::steady_clock::now();
  spec.deadline = start + std::chrono::milliseconds(300);
  absl::StatusOr<std::shared_ptr<Job>> submitted = engine->Submit(std::move(spec));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const JobResult result = Collect(**submitted);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.status.code(), absl::StatusCode::kDeadlineExceeded) << result.status;
  EXPECT_LT(seconds, 1.3);  // the deadline plus at most a shard or two
  EXPECT_LT(engine->DeviceStatuses()[0].shards_done, 400);
  EXPECT_EQ(BytesInUseAfterASecond(*engine), 0);
}

TEST(CpuEngineTest, CancelStopsAJobWhoseReaderStalledAndFreesItsMemory) {
  // 100 shards of 20 MB of full output against 32 MB of pending chunks: the
  // engine stops after the first shards while the reader does not read.
  EngineOptions options;
  options.max_pending_bytes_per_job = 32 << 20;
  auto engine = MakeEngine(kBudget, 1, 2, options);
  const int64_t paths = 20000, issuers = 20;
  const int64_t columns = 100 * kColumnAlignment;
  absl::StatusOr<std::shared_ptr<Job>> submitted = engine->Submit(MakeSpec(
      SpreadMarket(issuers), paths, 1, ScenarioMatrix::Generated(issuers, columns, 2, 0.0f, 1.0f),
      Output(true, false, false), kColumnAlignment));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  Job& job = **submitted;
  ASSERT_EQ(job.plan().shard_count, 100);

  // Read one chunk, never release it, then stop reading.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::optional<ResultChunk> first;
  while (!(first = job.results().Pop()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(first.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LT(engine->DeviceStatuses()[0].shards_done, 100);
  EXPECT_GT(engine->DeviceStatuses()[0].bytes_in_use, 0);

  job.Cancel(absl::CancelledError("the client stopped reading"));
  absl::Status status;
  const auto drain_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  bool drained = false;
  while (!(drained = job.results().Drained(&status)) &&
         std::chrono::steady_clock::now() < drain_deadline) {
    job.results().Pop();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(drained);
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(status.message()), HasSubstr("the client stopped reading"));
  EXPECT_FALSE(job.results().Pop().has_value());
  EXPECT_EQ(BytesInUseAfterASecond(*engine), 0);
  EXPECT_LT(engine->DeviceStatuses()[0].shards_done, 100);

  // The engine goes on serving.
  const JobResult next = RunJob(*engine, ReproducibilitySpec(0, 0));
  ASSERT_TRUE(next.status.ok()) << next.status;
  ExpectProductMatches(next, ReferenceScenarios(kScenarioSeed, kIssuers, kColumns, 0.0, 1.0),
                       kIssuers);
  EXPECT_EQ(BytesInUseAfterASecond(*engine), 0);
}

TEST(CpuEngineTest, JobOverEveryBudgetIsRefusedBeforeAnyWork) {
  const int64_t st_bytes = kPaths * kIssuers * 4;
  auto engine = MakeEngine(st_bytes - 1);
  absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(ReproducibilitySpec(0, 0));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted);
  // The message names the bytes needed (ST plus one 256-column block) and
  // the largest budget.
  const int64_t needed = st_bytes + (kIssuers + kPaths) * kColumnAlignment * 4;
  EXPECT_THAT(std::string(job.status().message()), HasSubstr(absl::StrCat("needs ", needed)));
  EXPECT_THAT(std::string(job.status().message()), HasSubstr(absl::StrCat(st_bytes - 1)));
  EXPECT_EQ(engine->DeviceStatuses()[0].peak_bytes, 0);  // nothing was allocated

  // A job that fits still runs.
  JobSpec small = ReproducibilitySpec(0, 0);
  small.paths = 100;
  small.shard_columns = kColumnAlignment;
  const JobResult next = RunJob(*engine, std::move(small));
  EXPECT_TRUE(next.status.ok()) << next.status;
}

TEST(CpuEngineTest, ShardsNarrowToFitTheBudgetAndGiveTheSameResult) {
  // The budget holds ST and one 256-column block, not the planner's width.
  const int64_t st_bytes = kPaths * kIssuers * 4;
  const int64_t budget = st_bytes + (kIssuers + kPaths) * kColumnAlignment * 4;
  JobSpec wide = ReproducibilitySpec(0, 0);
  wide.shard_columns = 4 * kColumnAlignment;
  auto roomy = MakeEngine(int64_t{1} << 30);
  const JobResult reference = RunJob(*roomy, wide);
  ASSERT_TRUE(reference.status.ok()) << reference.status;

  auto tight = MakeEngine(budget);
  absl::StatusOr<std::shared_ptr<Job>> job = tight->Submit(wide);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->plan().shard_columns, kColumnAlignment);
  const JobResult result = Collect(**job);
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.sc, reference.sc);
  EXPECT_LE(tight->DeviceStatuses()[0].peak_bytes, budget);
  EXPECT_EQ(BytesInUseAfterASecond(*tight), 0);
}

}  // namespace
}  // namespace pricer
