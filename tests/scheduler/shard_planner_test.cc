#include "server/scheduler/shard_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/backends/cpu/cpu_device.h"

namespace pricer {
namespace {

int64_t RoundUpTo(int64_t x, int64_t grid) { return (x + grid - 1) / grid * grid; }

// `statistics`: the basic selection (V0, mean, stddev, min, max) or none.
OutputSelection Output(bool full, bool statistics, bool terminal_prices = false) {
  OutputSelection output;
  output.full = full;
  output.statistics = statistics ? StatisticsSelection::Basic() : StatisticsSelection{};
  output.terminal_prices = terminal_prices;
  return output;
}

JobSpec Spec(int64_t paths, int64_t issuers, int64_t columns, int64_t column_begin,
             int64_t column_end, OutputSelection output, int64_t shard_columns = 0) {
  JobSpec spec;
  spec.market.spot.assign(static_cast<size_t>(issuers), 1.0);
  spec.market.volatility.assign(static_cast<size_t>(issuers), 0.2);
  spec.paths = paths;
  spec.scenarios = ScenarioMatrix::Generated(issuers, columns, 1, 0.0f, 1.0f);
  spec.column_begin = column_begin;
  spec.column_end = column_end;
  spec.output = output;
  spec.shard_columns = shard_columns;
  return spec;
}

// Checks every invariant of the shards of `spec` against the definitions.
void ExpectShardsTileTheRange(const JobSpec& spec) {
  SCOPED_TRACE("M=" + std::to_string(spec.scenarios.columns()) + " range [" +
               std::to_string(spec.column_begin) + ", " + std::to_string(spec.column_end) +
               ") shard_columns=" + std::to_string(spec.shard_columns) +
               " P=" + std::to_string(spec.paths));
  const int64_t m = spec.scenarios.columns();
  const ShardPlan plan = PlanShards(spec);
  const int64_t grid = kColumnAlignment;
  EXPECT_EQ(plan.gemm_begin, spec.column_begin / grid * grid);
  EXPECT_EQ(plan.gemm_end, std::min(m, RoundUpTo(spec.column_end, grid)));
  EXPECT_EQ(plan.shard_columns % grid, 0);
  ASSERT_GT(plan.shard_columns, 0);
  ASSERT_GT(plan.shard_count, 0);

  std::vector<int> kept(static_cast<size_t>(m), 0);
  int64_t next_gemm = plan.gemm_begin;
  for (int64_t k = 0; k < plan.shard_count; ++k) {
    const Shard shard = ShardAt(plan, spec, k);
    EXPECT_EQ(shard.index, k);
    EXPECT_EQ(shard.gemm_begin % grid, 0) << "shard " << k;
    EXPECT_EQ(shard.gemm_begin, next_gemm) << "shard " << k;
    EXPECT_LT(shard.gemm_begin, shard.gemm_end) << "shard " << k;
    EXPECT_LE(shard.gemm_end - shard.gemm_begin, plan.shard_columns) << "shard " << k;
    EXPECT_LE(shard.gemm_end, m) << "shard " << k;
    EXPECT_LE(shard.gemm_begin, shard.out_begin) << "shard " << k;
    EXPECT_LT(shard.out_begin, shard.out_end) << "shard " << k;
    EXPECT_LE(shard.out_end, shard.gemm_end) << "shard " << k;
    // Every shard but the last ends on an aligned column.
    if (k + 1 < plan.shard_count) {
      EXPECT_EQ(shard.gemm_end % grid, 0);
    }
    next_gemm = shard.gemm_end;
    for (int64_t j = shard.out_begin; j < shard.out_end; ++j) ++kept[static_cast<size_t>(j)];
  }
  EXPECT_EQ(next_gemm, plan.gemm_end);
  for (int64_t j = 0; j < m; ++j) {
    const int expected = j >= spec.column_begin && j < spec.column_end ? 1 : 0;
    ASSERT_EQ(kept[static_cast<size_t>(j)], expected) << "column " << j;
  }
}

TEST(ShardPlannerTest, ShardsTileTheRequestedRangeExactly) {
  struct Case {
    int64_t columns, begin, end, shard_columns, paths;
  };
  const Case cases[] = {
      {1000, 0, 1000, 0, 3000},
      {1000, 0, 1000, 64, 3000},
      {1000, 0, 1000, 192, 3000},
      {1000, 0, 1000, 1000, 3000},
      {1000, 130, 777, 64, 3000},
      {1000, 130, 777, 0, 3000},
      {1000, 130, 777, 100, 3000},
      {1000, 999, 1000, 64, 3000},
      {1000, 0, 1, 0, 3000},
      {1000, 960, 1000, 64, 3000},
      {1, 0, 1, 0, 10},
      {64, 0, 64, 0, 10},
      {65, 0, 65, 64, 10},
      {65, 64, 65, 0, 10},
      {100000, 12345, 99999, 0, 10000},
      {100000, 0, 100000, 0, 1000000},
      {1000, 255, 257, 0, 10},
      {1000, 256, 512, 64, 10},
      {5000, 300, 4000, 256, 100},
      {5000, 300, 4000, 600, 100},
  };
  for (const Case& c : cases) {
    ExpectShardsTileTheRange(
        Spec(c.paths, 3, c.columns, c.begin, c.end, Output(true, true), c.shard_columns));
  }
  // The seed example's shape.
  for (const Case& c : {Case{100000, 0, 100000, 0, 10000}, Case{5000, 1500, 2100, 0, 10000},
                        Case{5000, 300, 4000, 256, 10000}, Case{5000, 300, 4000, 3000, 10000}}) {
    ExpectShardsTileTheRange(
        Spec(c.paths, 500, c.columns, c.begin, c.end, Output(true, true), c.shard_columns));
  }
}

TEST(ShardPlannerTest, ChunkPayloadBytesIsTheSumOfWhatIsSent) {
  // full: P float32 values per column; basic statistics: V0, mean, stddev,
  // min and max, five float64 per column.
  EXPECT_EQ(ChunkPayloadBytes(Output(true, false), 1000, 0, 0, 7), 7 * 1000 * 4);
  EXPECT_EQ(ChunkPayloadBytes(Output(false, true), 1000, 0, 0, 7), 7 * 40);
  EXPECT_EQ(ChunkPayloadBytes(Output(true, true), 1000, 0, 0, 7), 7 * (1000 * 4 + 40));
  EXPECT_EQ(ChunkPayloadBytes(Output(false, false, true), 1000, 0, 0, 7), 0);
  // Each quantile, VaR and ES level adds one float64 per column.
  OutputSelection risk = Output(true, false);
  risk.statistics.quantiles = {0.01, 0.5, 0.99};
  risk.statistics.var = {0.99};
  risk.statistics.es = {0.99, 0.975};
  EXPECT_EQ(ChunkPayloadBytes(risk, 1000, 0, 0, 7), 7 * (1000 * 4 + (1 + 3 + 1 + 2) * 8));
  // Each contributed level adds A's rows in float32 per column, twice with
  // their errors.
  risk.statistics.es_contributions = {0.975};
  risk.statistics.var_contributions = {0.99};
  EXPECT_EQ(ChunkPayloadBytes(risk, 1000, 50, 0, 7),
            7 * (1000 * 4 + (1 + 3 + 1 + 2) * 8 + 2 * 50 * 4));
  risk.statistics.errors = true;
  EXPECT_EQ(ChunkPayloadBytes(risk, 1000, 50, 0, 7),
            7 * (1000 * 4 + (1 + 3 + 1 + 2 + 2 * 3 + 2 * 1 + 2) * 8 + 4 * 50 * 4));
}

TEST(ShardPlannerTest, ChunksStayUnderThePayloadLimit) {
  OutputSelection risk = Output(false, true);
  risk.statistics.quantiles = {0.05, 0.5, 0.95};
  risk.statistics.var = {0.99, 0.975};
  risk.statistics.es = {0.99, 0.975};
  const OutputSelection outputs[] = {Output(true, false), Output(false, true), Output(true, true),
                                     risk};
  for (const OutputSelection& output : outputs) {
    for (const int64_t paths : {int64_t{1}, int64_t{10000}, int64_t{1000000}}) {
      SCOPED_TRACE("full=" + std::to_string(output.full) + " statistics=" +
                   std::to_string(output.statistics.any()) + " P=" + std::to_string(paths));
      const int64_t columns = 1000000;
      const JobSpec spec = Spec(paths, 5, columns, 0, columns, output);
      const ShardPlan plan = PlanShards(spec);
      const int64_t per_column =
          (output.full ? 4 * paths : 0) + 8 * output.statistics.values_per_column();
      ASSERT_GE(plan.chunk_columns, 1);
      EXPECT_LE(plan.chunk_columns * per_column, kMaxChunkPayloadBytes);
      // Not needlessly small: one more column would not fit, or the chunk
      // already holds the whole range.
      EXPECT_TRUE(plan.chunk_columns == columns ||
                  (plan.chunk_columns + 1) * per_column > kMaxChunkPayloadBytes)
          << plan.chunk_columns;
      EXPECT_GE(plan.issuers_per_chunk, 1);
      EXPECT_LE(plan.issuers_per_chunk * paths * 4, kMaxChunkPayloadBytes);
    }
  }
}

TEST(ShardPlannerTest, RequestedChunkColumnsAreKeptWhenTheyFit) {
  OutputSelection output = Output(true, true);
  output.chunk_columns = 7;
  EXPECT_EQ(PlanShards(Spec(1000, 5, 1000, 0, 1000, output)).chunk_columns, 7);
  // Capped by the payload limit and by the range.
  output.chunk_columns = 1000000;
  const ShardPlan capped = PlanShards(Spec(100000, 5, 1000000, 0, 1000000, output));
  EXPECT_LE(capped.chunk_columns * (100000 * 4 + 40), kMaxChunkPayloadBytes);
  output.chunk_columns = 500;
  EXPECT_EQ(PlanShards(Spec(10, 5, 1000, 100, 130, output)).chunk_columns, 30);
}

TEST(ShardPlannerTest, ShardColumnsOverrideIsRoundedUpToTheAlignment) {
  const OutputSelection output = Output(false, true);
  const int64_t a = kColumnAlignment;
  const int64_t columns = 40 * a;
  auto width = [&](int64_t shard_columns) {
    return PlanShards(Spec(1000, 5, columns, 0, columns, output, shard_columns)).shard_columns;
  };
  EXPECT_EQ(width(1), a);
  EXPECT_EQ(width(a - 1), a);
  EXPECT_EQ(width(a), a);
  EXPECT_EQ(width(a + 1), 2 * a);
  EXPECT_EQ(width(3 * a - 7), 3 * a);
  EXPECT_EQ(width(3 * a), 3 * a);
  // Never wider than the aligned range.
  EXPECT_EQ(width(100 * a), columns);
  const ShardPlan plan = PlanShards(Spec(1000, 5, columns, 0, columns, output, 3 * a - 7));
  EXPECT_EQ(plan.shard_count, (40 + 2) / 3);
}

TEST(ShardPlannerTest, AutomaticShardWidthIsAlignedAndBounded) {
  for (const int64_t paths : {int64_t{1}, int64_t{10000}, int64_t{1000000}}) {
    const ShardPlan plan = PlanShards(Spec(paths, 5, 1000000, 0, 1000000, Output(false, true)));
    EXPECT_EQ(plan.shard_columns % kColumnAlignment, 0) << "P=" << paths;
    EXPECT_GE(plan.shard_columns, kColumnAlignment) << "P=" << paths;
    EXPECT_LE(plan.shard_columns, RoundUpTo(1000000, kColumnAlignment)) << "P=" << paths;
    // The SC block aims at kTargetShardBytes; it exceeds it only by the
    // rounding to the alignment.
    EXPECT_LE(plan.shard_columns * paths * 4, kTargetShardBytes + kColumnAlignment * paths * 4)
        << "P=" << paths;
    EXPECT_EQ(plan.shard_count, (1000000 + plan.shard_columns - 1) / plan.shard_columns);
  }
}

TEST(ShardPlannerTest, TerminalPricesOnlyHasNoShards) {
  const ShardPlan plan = PlanShards(Spec(10000, 50, 1000, 0, 1000, Output(false, false, true)));
  EXPECT_EQ(plan.shard_count, 0);
  EXPECT_GE(plan.issuers_per_chunk, 1);
  EXPECT_LE(plan.issuers_per_chunk * 10000 * 4, kMaxChunkPayloadBytes);
}

// The bytes a cpu device holds for an uncorrelated job of `paths` x
// `issuers` and one shard `width` columns wide, from the backend's own
// description (CpuJobBuffers): ST, the A block and the SC block, float32.
int64_t CpuJobBytes(int64_t paths, int64_t issuers, int64_t width) {
  return 4 * paths * issuers + 4 * (issuers + paths) * width;
}

struct PlanCase {
  int64_t paths, issuers, columns, begin, end, budget;
  double cap;  // the per-job cap, a fraction of each device's budget
  int devices;
  bool first_lost;
};

struct PlanOutcomes {
  int plans = 0, refusals = 0, narrowed = 0;
};

// Plans `c` on cpu devices, each half the budget of the one before, and
// checks the result against bytes computed here.
void CheckPlan(const PlanCase& c, PlanOutcomes* outcomes) {
  SCOPED_TRACE(absl::StrCat("P=", c.paths, " N=", c.issuers, " M=", c.columns, " [", c.begin, ", ",
                            c.end, ") budget ", c.budget, " cap ", c.cap, " devices ", c.devices,
                            c.first_lost ? " (first lost)" : ""));
  const JobSpec spec = Spec(c.paths, c.issuers, c.columns, c.begin, c.end, Output(true, true));
  std::vector<std::unique_ptr<CpuDevice>> cpus;
  std::vector<PlannerDevice> devices;
  for (int d = 0; d < c.devices; ++d) {
    cpus.push_back(std::make_unique<CpuDevice>(absl::StrCat("cpu", d), c.budget >> d, 1));
    devices.push_back(
        PlannerDevice{cpus.back().get(), c.first_lost && d == 0 ? "cpu0 is lost" : "",
                      static_cast<int64_t>(c.cap * static_cast<double>(c.budget >> d))});
  }
  const ShardPlan preferred = PlanShards(spec);
  ShardPlan plan = preferred;
  absl::StatusOr<std::vector<DevicePlan>> result = PlanDevices(spec, devices, 4, &plan);
  const int64_t narrowest = CpuJobBytes(c.paths, c.issuers, kColumnAlignment);
  std::vector<bool> narrowest_fits;
  for (const PlannerDevice& d : devices) {
    narrowest_fits.push_back(d.lost.empty() && narrowest <= d.job_budget);
  }
  if (std::none_of(narrowest_fits.begin(), narrowest_fits.end(), [](bool fits) { return fits; })) {
    ++outcomes->refusals;
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(std::string(result.status().message()),
                ::testing::HasSubstr(absl::StrCat("needs ", narrowest, " bytes")));
    EXPECT_THAT(std::string(result.status().message()),
                ::testing::HasSubstr("one shard of 256 columns"));
    return;
  }
  ++outcomes->plans;
  ASSERT_TRUE(result.ok()) << result.status();
  const int64_t width = plan.shard_columns;
  ASSERT_EQ(width % kColumnAlignment, 0);
  ASSERT_GE(width, kColumnAlignment);
  ASSERT_LE(width, preferred.shard_columns);
  EXPECT_EQ(plan.shard_count, (plan.gemm_end - plan.gemm_begin + width - 1) / width);
  bool preferred_fits_all = true;
  for (size_t d = 0; d < devices.size(); ++d) {
    SCOPED_TRACE(absl::StrCat("device ", d));
    const DevicePlan& p = (*result)[d];
    EXPECT_EQ(p.resident_bytes, 4 * c.paths * c.issuers);
    EXPECT_EQ(p.shard_bytes, 4 * (c.issuers + c.paths) * width);
    EXPECT_EQ(p.shards_in_flight > 0, static_cast<bool>(narrowest_fits[d]));
    if (p.shards_in_flight > 0) {
      EXPECT_LE(p.resident_bytes + p.shards_in_flight * p.shard_bytes, devices[d].job_budget);
    }
    EXPECT_LE(devices[d].job_budget, cpus[d]->memory().budget());
    if (narrowest_fits[d] &&
        CpuJobBytes(c.paths, c.issuers, preferred.shard_columns) > devices[d].job_budget) {
      preferred_fits_all = false;
    }
  }
  // Narrowed only when a device that can take the job needed it.
  if (width < preferred.shard_columns) ++outcomes->narrowed;
  EXPECT_EQ(width < preferred.shard_columns, !preferred_fits_all);
}

// Plans over a grid of jobs, budgets, per-job caps and device counts: every
// plan fits both limits on every device, narrows only when the preferred
// width does not fit, and plans every device the narrowest shard fits; every
// refusal is a job whose narrowest shard fits no device, and names its bytes.
TEST(PlanDevicesTest, EveryPlanFitsBothLimitsAndOnlyJobsThatFitNowhereAreRefused) {
  struct Range {
    int64_t columns, begin, end;
  };
  PlanOutcomes outcomes;
  for (const int64_t paths : {int64_t{1000}, int64_t{10000}, int64_t{30000}}) {
    for (const int64_t issuers : {int64_t{20}, int64_t{500}}) {
      for (const Range r :
           {Range{5000, 0, 5000}, Range{5000, 300, 777}, Range{100000, 0, 100000}}) {
        for (const int64_t budget : {int64_t{2} << 20, int64_t{16} << 20, int64_t{48} << 20,
                                     int64_t{64} << 20, int64_t{1} << 30}) {
          for (const double cap : {1.0, 0.25}) {
            for (const int devices : {1, 2, 3}) {
              for (const bool first_lost : {false, true}) {
                if (first_lost && devices == 1) continue;
                CheckPlan(
                    {paths, issuers, r.columns, r.begin, r.end, budget, cap, devices, first_lost},
                    &outcomes);
              }
            }
          }
        }
      }
    }
  }
  // The grid holds all three outcomes.
  EXPECT_GT(outcomes.plans, 0);
  EXPECT_GT(outcomes.refusals, 0);
  EXPECT_GT(outcomes.narrowed, 0);
}

// The two requests of issue 26 that the 1,024-column grid refused.
TEST(PlanDevicesTest, TightBudgetsNarrowToTheAlignment) {
  struct Case {
    int64_t paths, budget;
    double cap;
    OutputSelection output;
  };
  for (const Case& c : {Case{10000, int64_t{48} << 20, 1.0, Output(true, false)},
                        Case{1000, int64_t{64} << 20, 0.25, Output(false, true)}}) {
    SCOPED_TRACE(absl::StrCat("P=", c.paths, " budget ", c.budget, " cap ", c.cap));
    const JobSpec spec = Spec(c.paths, 500, 5000, 0, 5000, c.output);
    CpuDevice cpu0("cpu0", c.budget, 1), cpu1("cpu1", c.budget, 1);
    const auto job_budget = static_cast<int64_t>(c.cap * static_cast<double>(c.budget));
    ShardPlan plan = PlanShards(spec);
    absl::StatusOr<std::vector<DevicePlan>> result = PlanDevices(
        spec, {PlannerDevice{&cpu0, "", job_budget}, PlannerDevice{&cpu1, "", job_budget}}, 4,
        &plan);
    ASSERT_TRUE(result.ok()) << result.status();
    for (const DevicePlan& p : *result) {
      EXPECT_GE(p.shards_in_flight, 1);
      EXPECT_LE(p.resident_bytes + p.shards_in_flight * p.shard_bytes, job_budget);
    }
  }
}

}  // namespace
}  // namespace pricer
