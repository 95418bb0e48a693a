// Reproducibility of the engine with the real cpu backend: the same bits
// whatever the shard width, chunk size, column range, devices and threads,
// correlated and antithetic shocks included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "server/model/correlation.h"
#include "server/scheduler/engine.h"
#include "server/scheduler/shard_planner.h"
#include "tests/backends/cpu/cpu_engine_test_util.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {
namespace {

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

TEST(CpuEngineTest, ABudgetThatNarrowsTheShardsDoesNotChangeTheBits) {
  // ST over 8 MiB (2100 x 1000 floats, 8.4 MB): a large budget runs the
  // whole range as one 2816-column shard; 12 MB holds ST and one shard of
  // 256 columns (3.17 MB) but not of 512 (6.35 MB), so the planner narrows
  // to the alignment. Every GEMM is one 256-column block either way.
  constexpr int64_t kWidePaths = 2100, kWideIssuers = 1000, kWideColumns = 2600;
  constexpr int64_t kTightBudget = 12'000'000;
  auto spec = [&] {
    return MakeSpec(
        SpreadMarket(kWideIssuers), kWidePaths, kSeed,
        ScenarioMatrix::Generated(kWideIssuers, kWideColumns, kScenarioSeed, 0.0f, 1.0f),
        Output(true, true, false), 0);
  };
  auto engine = MakeEngine(int64_t{1} << 30, 1, 2);
  const JobResult baseline = RunJob(*engine, spec());
  ASSERT_TRUE(baseline.status.ok()) << baseline.status;
  for (const int devices : {1, 2}) {
    auto tight = MakeEngine(kTightBudget, devices, 2);
    ExpectSameBits(baseline, RunJob(*tight, spec()),
                   std::to_string(devices) + " devices of a 12 MB budget");
    for (const DeviceStatus& device : tight->DeviceStatuses()) {
      // ST and one 256-column shard: 8,400,000 + 3,174,400 bytes.
      EXPECT_LE(device.peak_bytes, 8'400'000 + 3'174'400) << device.name;
    }
  }
  auto tight = MakeEngine(kTightBudget, 1, 2);
  JobSpec range = spec();
  range.column_begin = 1500;
  range.column_end = 2100;
  ExpectSameBits(baseline, RunJob(*tight, std::move(range)), "columns [1500, 2100), 12 MB");
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

TEST(CpuEngineTest, ABlockOverTheFlopsPerPollIsSplitByPathsTheSameWayEverywhere) {
  // 2 x 2000 x 6000 x 256 flop per 256-column block is over the 5e9 the
  // cpu device runs between two polls of a job's stop: each block's GEMM is
  // split into 1616 + 384 paths, whatever the block's width (64 here, 256 by
  // default) or the device, so the bits stay the same. (Small enough for the
  // TSan run: at 4000 x 10,000 it took 204 s there.)
  const int64_t paths = 2000, issuers = 6000, columns = 300;
  auto spec = [&](int64_t shard_columns, int64_t begin, int64_t end) {
    JobSpec s = MakeSpec(SpreadMarket(issuers), paths, kSeed,
                         ScenarioMatrix::Generated(issuers, columns, kScenarioSeed, 0.0f, 1.0f),
                         Output(true, true, true), shard_columns);
    s.column_begin = begin;
    s.column_end = end;
    return s;
  };
  auto engine = MakeEngine(kBudget, 1, 2);
  const JobResult baseline = RunJob(*engine, spec(0, 0, columns));
  ASSERT_TRUE(baseline.status.ok()) << baseline.status;
  const JobResult narrow = RunJob(*engine, spec(64, 0, columns));
  ExpectSameBits(baseline, narrow, "shard_columns 64");
  auto two = MakeEngine(kBudget, 2, 1);
  ExpectSameBits(baseline, RunJob(*two, spec(0, 100, columns)), "2 devices, columns [100, 300)");
  // Against float64 on 12 columns (4000 x 12 x 10,000 products).
  const JobResult few = RunJob(*engine, spec(0, 0, 12));
  ASSERT_TRUE(few.status.ok()) << few.status;
  ExpectProductMatches(few, ReferenceScenarios(kScenarioSeed, issuers, 12, 0.0, 1.0), issuers);
}

}  // namespace
}  // namespace pricer
