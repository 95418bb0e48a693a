// The cuda backend through the engine. Without a GPU: the failure of a job
// that needs one (the engine carries on, on cpu devices where there are
// some). With a GPU: results against the cpu backend on the same request, and
// the device memory a job takes, as the engine counts it and as the GPU
// reports it (cuda_sizing_test for the sizing itself).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/backends/cuda/cuda_device.h"
#include "server/scheduler/engine.h"
#include "tests/backends/cpu/engine_test_util.h"
#include "tests/backends/cuda/cuda_test_util.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const std::vector<float>> InlineValues(int64_t rows, int64_t columns) {
  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(rows * columns));
  for (size_t k = 0; k < values->size(); ++k) {
    (*values)[k] = static_cast<float>((k * 7919) % 2001) / 1000.0f - 0.5f;  // [-0.5, 1.5]
  }
  return values;
}

// The errors of `gpu` against `cpu` (the GPU's kernels and the cpu's
// ColumnErrors, from values that differ by the GEMM's rounding): standard
// errors within 1e-3, interval bounds within 1e-2 of the column's mean or V0
// (a count one higher moves a bound by one order statistic).
void ExpectErrorsNear(const ColumnStatistics& gpu, const ColumnStatistics& cpu) {
  for (int64_t j = 0; j < cpu.columns(); ++j) {
    const double mean = std::abs(cpu.mean[j]), v0 = std::abs(cpu.v0[j]);
    // Within `relative` of `scale`, or of the value itself when it is 0.
    auto near = [&](const std::vector<double>& g, const std::vector<double>& c, double relative,
                    double scale, const char* what) {
      ASSERT_EQ(g.size(), c.size()) << what;
      if (c.empty()) return;
      const double tolerance = relative * (scale > 0 ? scale : std::abs(c[j]));
      EXPECT_NEAR(g[j], c[j], tolerance) << what << " of column " << j;
    };
    near(gpu.mean_se, cpu.mean_se, 1e-3, 0, "mean_se");
    near(gpu.stddev_se, cpu.stddev_se, 1e-3, 0, "stddev_se");
    for (size_t l = 0; l < cpu.quantiles_lo.size(); ++l) {
      near(gpu.quantiles_lo[l], cpu.quantiles_lo[l], 1e-2, mean, "quantile lower");
      near(gpu.quantiles_hi[l], cpu.quantiles_hi[l], 1e-2, mean, "quantile upper");
    }
    for (size_t l = 0; l < cpu.var_lo.size(); ++l) {
      near(gpu.var_lo[l], cpu.var_lo[l], 1e-2, v0, "VaR lower");
      near(gpu.var_hi[l], cpu.var_hi[l], 1e-2, v0, "VaR upper");
    }
    for (size_t l = 0; l < cpu.es_se.size(); ++l) {
      near(gpu.es_se[l], cpu.es_se[l], 1e-3, 0, "ES se");
    }
  }
}

// --- Without a GPU ------------------------------------------------------------

TEST(CudaWithoutGpuTest, AJobFailsNamingTheDeviceAndTheCallAndTheDeviceIsLost) {
  if (HasGpu()) GTEST_SKIP() << "this host has a GPU";
  std::unique_ptr<Engine> engine = MakeCudaEngine();
  JobResult result = RunJob(*engine, SeedExampleSpec(512));
  ASSERT_FALSE(result.status.ok());
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("cuda0"));
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("cudaSetDevice failed"));
  // Nothing stays reserved; the device is lost (no driver), and the engine
  // refuses the next job saying why instead of failing it on the device.
  const DeviceStatus status = engine->DeviceStatuses()[0];
  EXPECT_EQ(status.bytes_in_use, 0);
  EXPECT_THAT(status.lost, HasSubstr("cuda0: cudaSetDevice failed"));
  absl::StatusOr<std::shared_ptr<Job>> again = engine->Submit(SeedExampleSpec(256));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(again.status().message()),
              HasSubstr("no device can take work: cuda0: cudaSetDevice failed"));
}

TEST(CudaWithoutGpuTest, ACpuDeviceBesideItPricesTheJobUnchanged) {
  if (HasGpu()) GTEST_SKIP() << "this host has a GPU";
  JobSpec spec = MakeSpec(SpreadMarket(37), 999, 5, ScenarioMatrix::Generated(37, 1500, 3, 0, 1),
                          Output(/*full=*/true, /*statistics=*/true, /*terminal_prices=*/false));
  spec.shard_columns = 256;
  std::unique_ptr<Engine> mixed = MakeCudaEngine(kCudaBudget, /*with_cpu=*/true);
  JobResult result = RunJob(*mixed, spec);
  ASSERT_TRUE(result.status.ok()) << result.status;
  std::unique_ptr<Engine> cpu = MakeEngine();
  JobResult reference = RunJob(*cpu, spec);
  ASSERT_TRUE(reference.status.ok()) << reference.status;
  EXPECT_EQ(result.sc, reference.sc);  // the shards that failed on cuda0 ran on cpu0
  EXPECT_EQ(result.statistics.mean, reference.statistics.mean);
  // cuda0 is lost after its first failure: the next job is planned on cpu0
  // only, and nothing fails. (On a busy host cpu0's workers may have run
  // every shard before cuda0's took one: price again until cuda0 has tried.)
  for (int attempt = 0; attempt < 20 && mixed->DeviceStatuses()[0].lost.empty(); ++attempt) {
    const JobResult more = RunJob(*mixed, spec);
    ASSERT_TRUE(more.status.ok()) << more.status;
    EXPECT_EQ(more.sc, reference.sc);
  }
  EXPECT_FALSE(mixed->DeviceStatuses()[0].lost.empty());
  absl::StatusOr<std::shared_ptr<Job>> next = mixed->Submit(spec);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ((*next)->device_plans()[0].shards_in_flight, 0);
  EXPECT_GT((*next)->device_plans()[1].shards_in_flight, 0);
  const JobResult again = Collect(**next);
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_EQ(again.sc, reference.sc);
}

// --- With a GPU ---------------------------------------------------------------

void ExpectTerminalPricesNear(const JobSpec& spec, double relative) {
  const Comparison c = RunBoth(spec);
  for (int64_t i = 0; i < spec.market.issuers(); ++i) {
    EXPECT_LE(ColumnError(c.gpu.StColumn(i), c.cpu.StColumn(i)), relative) << "issuer " << i;
  }
}

TEST(CudaEngineTest, TerminalPricesMatchTheCpuBackend) {
  REQUIRE_GPU();
  // 37 issuers: a last block of one issuer; 1001 paths: odd, with antithetic.
  JobSpec spec = MakeSpec(SpreadMarket(37), 1001, 9, ScenarioMatrix::Generated(37, 256, 1, 0, 1),
                          Output(false, false, /*terminal_prices=*/true));
  ExpectTerminalPricesNear(spec, 1e-6);
  spec.antithetic = true;
  ExpectTerminalPricesNear(spec, 1e-6);
  spec.market.correlation_factor = EqualCorrelationFactor(37, 0.4);
  ExpectTerminalPricesNear(spec, 1e-6);
}

void ExpectResultsNear(const JobSpec& spec, double relative) {
  const Comparison c = RunBoth(spec);
  for (int64_t j = spec.column_begin; j < spec.column_end; ++j) {
    EXPECT_LE(ColumnError(c.gpu.ScColumn(j), c.cpu.ScColumn(j)), relative) << "column " << j;
  }
  ExpectStatisticsNear(c.gpu.statistics, c.cpu.statistics, relative);
}

JobSpec RiskSpec(ScenarioMatrix scenarios) {
  const int64_t issuers = scenarios.rows();
  JobSpec spec = MakeSpec(SpreadMarket(issuers), 4000, 21, std::move(scenarios),
                          Output(/*full=*/true, /*statistics=*/true, false));
  spec.output.statistics = RiskSelection();
  return spec;
}

TEST(CudaEngineTest, InlineScenarioResultsAndStatisticsMatchTheCpuBackend) {
  REQUIRE_GPU();
  const int64_t issuers = 61, columns = 1300;
  JobSpec spec = RiskSpec(ScenarioMatrix::Inline(issuers, columns, InlineValues(issuers, columns)));
  spec.column_begin = 100;  // not aligned: the first shard keeps part of its block
  spec.column_end = 1250;
  ExpectResultsNear(spec, 1e-5);
}

TEST(CudaEngineTest, GeneratedScenarioResultsAndStatisticsMatchTheCpuBackend) {
  REQUIRE_GPU();
  // V0 within 1e-12 (ExpectStatisticsNear) shows the GPU drew the same A.
  JobSpec spec = RiskSpec(ScenarioMatrix::Generated(53, 2100, 17, -1.0f, 2.0f));
  spec.market.correlation_factor = EqualCorrelationFactor(53, 0.25);
  spec.antithetic = true;
  ExpectResultsNear(spec, 1e-5);
}

// A book of calls (some expiring at the horizon, with their own
// volatility), puts and a forward, on GBM paths and on historical returns:
// V built by the GPU's kernel, then the same GEMMs and statistics.
TEST(CudaEngineTest, BooksAndHistoricalScenariosMatchTheCpuBackend) {
  REQUIRE_GPU();
  constexpr int64_t kIssuers = 40, kPaths = 4000;
  const Market market = SpreadMarket(kIssuers);
  std::vector<Instrument> book;
  for (int64_t i = 0; i < kIssuers; ++i) {
    const double spot = market.spot[static_cast<size_t>(i)];
    book.push_back({i, InstrumentType::kCall, spot, 1.5, std::nullopt});
    book.push_back({i, InstrumentType::kPut, 0.9 * spot, 1.0, 0.3});
  }
  book.push_back({3, InstrumentType::kForward, 50, 2.0, std::nullopt});
  const auto rows = static_cast<int64_t>(book.size());
  JobSpec spec = MakeSpec(market, kPaths, 21, ScenarioMatrix::Generated(rows, 1100, 5, -1.0f, 1.0f),
                          Output(/*full=*/true, /*statistics=*/true, false));
  spec.output.statistics = RiskSelection();
  spec.instruments = book;
  ExpectResultsNear(spec, 1e-5);
  auto returns = std::make_shared<std::vector<float>>(static_cast<size_t>(kPaths * kIssuers));
  for (size_t k = 0; k < returns->size(); ++k) {
    (*returns)[k] = static_cast<float>((k * 7919) % 2001) / 5000.0f - 0.2f;  // [-0.2, 0.2]
  }
  spec.returns = ScenarioMatrix::Inline(kPaths, kIssuers, std::move(returns));
  ExpectResultsNear(spec, 1e-5);
}

// The errors on the GPU (SC never leaves it): the risk selection's levels
// by sorting at P = 4,000, the tail's by the window at the example's P =
// 10,000; with antithetic pairs too.
TEST(CudaEngineTest, StatisticErrorsMatchTheCpuBackend) {
  REQUIRE_GPU();
  JobSpec spec = RiskSpec(ScenarioMatrix::Generated(40, 900, 5, 0.0f, 1.0f));
  spec.output.full = false;
  spec.output.statistics.errors = true;
  for (bool window : {false, true}) {
    if (window) {
      spec.paths = 10'000;
      spec.output.statistics.quantiles = {0.01};
      ASSERT_FALSE(
          MakeTestCudaDevice(kCudaBudget, PinnedMemory())->BuffersOf(spec, 512).sort.has_value());
    }
    for (bool antithetic : {false, true}) {
      SCOPED_TRACE(testing::Message() << "window " << window << ", antithetic " << antithetic);
      spec.antithetic = antithetic;
      const Comparison c = RunBoth(spec);
      ExpectStatisticsNear(c.gpu.statistics, c.cpu.statistics, 1e-5);
      ExpectErrorsNear(c.gpu.statistics, c.cpu.statistics);
    }
  }
}

TEST(CudaEngineTest, TensorFloat32ResultsAreWithinItsTolerance) {
  REQUIRE_GPU();
  JobSpec spec = RiskSpec(ScenarioMatrix::Generated(128, 1024, 4, 0.0f, 1.0f));
  spec.precision = GemmPrecision::kTensorFloat32;
  ExpectResultsNear(spec, 5e-3);
  // And the tensor cores were used: TF32 rounds the inputs, so SC is not the
  // GPU's own FP32 result.
  std::unique_ptr<Engine> engine = MakeCudaEngine();
  const JobResult tf32 = RunJob(*engine, spec);
  spec.precision = GemmPrecision::kFloat32;
  const JobResult fp32 = RunJob(*engine, spec);
  ASSERT_TRUE(tf32.status.ok() && fp32.status.ok());
  EXPECT_NE(tf32.sc, fp32.sc);
}

// `spec` run on `engine` with 256- and 2048-column shards (both must succeed).
std::pair<JobResult, JobResult> NarrowAndWide(Engine& engine, JobSpec& spec) {
  spec.shard_columns = 256;
  JobResult narrow = RunJob(engine, spec);
  spec.shard_columns = 2048;
  JobResult wide = RunJob(engine, spec);
  EXPECT_TRUE(narrow.status.ok()) << narrow.status;
  EXPECT_TRUE(wide.status.ok()) << wide.status;
  return {std::move(narrow), std::move(wide)};
}

TEST(CudaEngineTest, ResultsDoNotDependOnShardWidthOrColumnRange) {
  REQUIRE_GPU();
  JobSpec spec = RiskSpec(ScenarioMatrix::Generated(40, 3000, 8, 0.0f, 1.0f));
  std::unique_ptr<Engine> engine = MakeCudaEngine();
  const auto [narrow, wide] = NarrowAndWide(*engine, spec);
  ASSERT_TRUE(narrow.status.ok() && wide.status.ok());
  EXPECT_EQ(narrow.sc, wide.sc);
  EXPECT_EQ(narrow.statistics.es, wide.statistics.es);
  spec.column_begin = 700;
  spec.column_end = 1900;
  const JobResult part = RunJob(*engine, spec);
  ASSERT_TRUE(part.status.ok()) << part.status;
  for (int64_t j = 700; j < 1900; ++j) ASSERT_EQ(part.ScColumn(j), wide.ScColumn(j)) << j;
}

TEST(CudaEngineTest, MomentsShortcutMatchesTheCpuBackendWhateverTheShards) {
  REQUIRE_GPU();
  // Inline scenarios (A staged through pinned memory) and a partial last block.
  JobSpec spec =
      MakeSpec(SpreadMarket(40), 4000, 21, ScenarioMatrix::Inline(40, 3000, InlineValues(40, 3000)),
               Output(false, true, false));
  spec.output.statistics.min = spec.output.statistics.max = false;
  spec.output.statistics.from_covariance = true;
  const Comparison c = RunBoth(spec);  // the GPU's memory within its budget, too
  // Both are float64 moments of ST A: they differ by ST's float32 rounding.
  ExpectStatisticsNear(c.gpu.statistics, c.cpu.statistics, 1e-6);
  std::unique_ptr<Engine> engine = MakeCudaEngine();
  const auto [narrow, wide] = NarrowAndWide(*engine, spec);
  ASSERT_TRUE(narrow.status.ok() && wide.status.ok());
  EXPECT_EQ(narrow.statistics.mean, wide.statistics.mean);
  EXPECT_EQ(narrow.statistics.stddev, wide.statistics.stddev);
}

// What a job holds on the device, read from its MemoryAccount, is its
// table: every buffer it allocates is an entry, at the entry's size.
TEST(CudaEngineTest, AJobAllocatesTheBuffersOfItsTableAndNoOthers) {
  REQUIRE_GPU();
  const int64_t issuers = 61, columns = 600, width = 512;
  for (bool correlated : {false, true}) {
    SCOPED_TRACE(correlated ? "correlated" : "independent");
    // Inline scenarios, full output and order statistics: every entry.
    JobSpec spec =
        RiskSpec(ScenarioMatrix::Inline(issuers, columns, InlineValues(issuers, columns)));
    if (correlated) spec.market.correlation_factor = EqualCorrelationFactor(issuers, 0.3);
    const std::shared_ptr<MemoryAccount> pinned = PinnedMemory();
    const std::unique_ptr<CudaDevice> made = MakeTestCudaDevice(kCudaBudget, pinned);
    CudaDevice& device = *made;
    const AllocationTable table = device.Allocations(spec, width);
    const CudaJobBuffers buffers = device.BuffersOf(spec, width);
    // Full output and inline scenarios: every pinned entry too.
    ASSERT_EQ(table.pinned_per_shard.size(), 3u);
    ASSERT_EQ(buffers.correlation.has_value(), correlated);
    ASSERT_TRUE(buffers.statistics.has_value() && buffers.sort.has_value());
    // What stays once ST is built; the other resident entries go with it.
    const int64_t held = buffers.st.bytes() + buffers.today_f64.bytes() +
                         buffers.order_levels.bytes() + buffers.sort->offsets.bytes();

    absl::StatusOr<std::unique_ptr<DeviceJob>> job = device.StartJob(spec, width);
    ASSERT_TRUE(job.ok()) << job.status();
    // All the resident entries are live at once while ST is built.
    EXPECT_EQ(device.memory().peak(), table.resident_bytes());
    EXPECT_EQ(device.memory().in_use(), held);
    ShardOutput out;
    const absl::Status run = (*job)->RunShard(Shard{0, 0, width, 0, width}, &out);
    ASSERT_TRUE(run.ok()) << run;
    // The shard's slot, kept for the next shard: the per-shard entries, on
    // the GPU and pinned on the host, but for the full-output block, which
    // the chunks hold (`out`) outside the pinned account.
    EXPECT_EQ(device.memory().in_use(), held + table.shard_bytes());
    EXPECT_EQ(device.memory().peak(), std::max(table.resident_bytes(), held + table.shard_bytes()));
    EXPECT_EQ(pinned->in_use(), table.pinned_shard_bytes() - buffers.values_host->bytes());
    ASSERT_EQ(out.owned_values.size(), static_cast<size_t>(width * spec.paths));
    job->reset();
    EXPECT_EQ(device.memory().in_use(), 0);
    // The slot's blocks wait in the GPU's pool for the next job, uncounted;
    // the output block joins them when its last chunk goes.
    EXPECT_EQ(pinned->in_use(), 0);
    EXPECT_EQ(device.pinned_pool().idle_blocks(), 2u);
    out = ShardOutput{};
    EXPECT_EQ(device.pinned_pool().idle_blocks(), 3u);
  }
}

TEST(CudaEngineTest, DeviceMemoryReturnsToZeroAndThePeakFitsTheBudget) {
  REQUIRE_GPU();
  JobSpec spec = RiskSpec(ScenarioMatrix::Generated(100, 5000, 8, 0.0f, 1.0f));
  // Exactly room for ST and two shards of the planner's width: both slots
  // run at the edge of the budget, and what the GPU reports in use stays
  // within it and the measured headroom.
  const std::unique_ptr<CudaDevice> probe = MakeTestCudaDevice(kCudaBudget, PinnedMemory());
  const int64_t width = PlanShards(spec).shard_columns;
  const int64_t budget = probe->ResidentBytes(spec) + 2 * probe->ShardBytes(spec, width);
  std::unique_ptr<Engine> engine = MakeCudaEngine(budget);
  GpuMemoryWatch watch;
  const JobResult result = RunJob(*engine, spec);
  ASSERT_TRUE(result.status.ok()) << result.status;
  ExpectGpuUseWithinBudget(*engine, watch.Stop());
  const DeviceStatus status = engine->DeviceStatuses()[0];
  EXPECT_EQ(status.shards_done, PlanShards(spec).shard_count);
  EXPECT_GT(status.peak_bytes, 0);
  EXPECT_LE(status.peak_bytes, budget);
  EXPECT_EQ(status.bytes_in_use, 0);
}

}  // namespace
}  // namespace pricer
