// The moments shortcut (StatisticsSelection::from_covariance) with the real
// cpu backend: the float64 moments of the exact product ST A, the GEMM
// path's to float32 rounding, and the same bits whatever the shard width,
// column range and devices.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server/scheduler/engine.h"
#include "tests/backends/cpu/cpu_engine_test_util.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {
namespace {

// The reproducibility job with mean and stddev, from ST's covariance or
// (`shortcut` false) from SC, and ST sent back.
JobSpec MomentsSpec(bool shortcut, int64_t shard_columns = 0, int64_t paths = kPaths) {
  OutputSelection output = Output(false, true, true);
  output.statistics.min = output.statistics.max = false;
  output.statistics.from_covariance = shortcut;
  return MakeSpec(SpreadMarket(kIssuers), paths, kSeed,
                  ScenarioMatrix::Generated(kIssuers, kColumns, kScenarioSeed, 0.0f, 1.0f), output,
                  shard_columns);
}

TEST(CpuEngineMomentsTest, ShortcutGivesTheFloat64MomentsOfTheProductAndTheGemmPathsToRounding) {
  auto engine = MakeEngine();
  const JobResult shortcut = RunJob(*engine, MomentsSpec(true));
  const JobResult gemm = RunJob(*engine, MomentsSpec(false));
  ASSERT_TRUE(shortcut.status.ok()) << shortcut.status;
  ASSERT_TRUE(gemm.status.ok()) << gemm.status;
  ASSERT_EQ(shortcut.st, gemm.st);
  EXPECT_EQ(shortcut.summary.gemm_seconds, 0.0);  // no SC formed
  const Dense a = ReferenceScenarios(kScenarioSeed, kIssuers, kColumns, 0.0, 1.0);
  std::vector<double> column(static_cast<size_t>(kPaths));
  for (int64_t j = 0; j < kColumns; j += 7) {
    // SC[:, j] in float64 from the float32 ST and A, then its two-pass moments.
    double sum = 0;
    for (int64_t p = 0; p < kPaths; ++p) {
      double x = 0;
      for (int64_t i = 0; i < kIssuers; ++i) {
        x += static_cast<double>(shortcut.St(p, i)) * a[static_cast<size_t>(j * kIssuers + i)];
      }
      column[static_cast<size_t>(p)] = x;
      sum += x;
    }
    const double mean = sum / kPaths;
    double squares = 0;
    for (const double x : column) squares += (x - mean) * (x - mean);
    const double stddev = std::sqrt(squares / (kPaths - 1));
    const size_t k = static_cast<size_t>(j);
    SCOPED_TRACE("column " + std::to_string(j));
    EXPECT_NEAR(shortcut.statistics.mean[k], mean, 1e-12 * std::abs(mean));
    EXPECT_NEAR(shortcut.statistics.stddev[k], stddev, 1e-10 * stddev);
    EXPECT_EQ(shortcut.statistics.v0[k], gemm.statistics.v0[k]);
    // The GEMM path rounds each value of SC to float32 (about 6e-8 of it).
    EXPECT_NEAR(gemm.statistics.mean[k], mean, 1e-6 * std::abs(mean));
    EXPECT_NEAR(gemm.statistics.stddev[k], stddev, 1e-5 * stddev);
  }
}

TEST(CpuEngineMomentsTest, ShortcutBitsDoNotDependOnShardWidthColumnRangeOrDevices) {
  auto engine = MakeEngine();
  const JobResult baseline = RunJob(*engine, MomentsSpec(true));
  ASSERT_TRUE(baseline.status.ok()) << baseline.status;
  auto two_devices = MakeEngine(kBudget, 2, 1);
  JobSpec range = MomentsSpec(true, 256);
  range.column_begin = 130;
  range.column_end = 777;
  struct Run {
    std::string what;
    JobResult result;
  };
  std::vector<Run> runs;
  runs.push_back({"256-column shards", RunJob(*engine, MomentsSpec(true, 256))});
  runs.push_back({"2 devices", RunJob(*two_devices, MomentsSpec(true, 512))});
  runs.push_back({"columns [130, 777)", RunJob(*engine, std::move(range))});
  for (const Run& run : runs) {
    SCOPED_TRACE(run.what);
    ASSERT_TRUE(run.result.status.ok()) << run.result.status;
    for (int64_t j = run.result.column_begin; j < run.result.column_end; ++j) {
      const size_t b = static_cast<size_t>(j - baseline.column_begin);
      const size_t r = static_cast<size_t>(j - run.result.column_begin);
      ASSERT_EQ(run.result.statistics.mean[r], baseline.statistics.mean[b]) << "column " << j;
      ASSERT_EQ(run.result.statistics.stddev[r], baseline.statistics.stddev[b]) << "column " << j;
      ASSERT_EQ(run.result.statistics.v0[r], baseline.statistics.v0[b]) << "column " << j;
    }
  }
}

TEST(CpuEngineMomentsTest, OnePathIsItsOwnMeanWithNoSpread) {
  auto engine = MakeEngine();
  const JobResult one = RunJob(*engine, MomentsSpec(true, 0, 1));
  ASSERT_TRUE(one.status.ok()) << one.status;
  const Dense a = ReferenceScenarios(kScenarioSeed, kIssuers, kColumns, 0.0, 1.0);
  for (int64_t j = 0; j < kColumns; j += 97) {
    double value = 0;
    for (int64_t i = 0; i < kIssuers; ++i) {
      value += static_cast<double>(one.St(0, i)) * a[static_cast<size_t>(j * kIssuers + i)];
    }
    EXPECT_NEAR(one.statistics.mean[static_cast<size_t>(j)], value, 1e-12 * value);
    EXPECT_EQ(one.statistics.stddev[static_cast<size_t>(j)], 0.0);
  }
}

}  // namespace
}  // namespace pricer
