#include "server/scheduler/shard_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

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
  const int64_t grid = ColumnGrid(spec);
  EXPECT_EQ(grid % kColumnAlignment, 0);
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
  // The seed example's shape: a 1024-column grid.
  for (const Case& c : {Case{100000, 0, 100000, 0, 10000}, Case{5000, 1500, 2100, 0, 10000},
                        Case{5000, 300, 4000, 256, 10000}, Case{5000, 300, 4000, 3000, 10000}}) {
    ExpectShardsTileTheRange(
        Spec(c.paths, 500, c.columns, c.begin, c.end, Output(true, true), c.shard_columns));
  }
}

TEST(ShardPlannerTest, TheWideGridNeedsALargeSTAndASmallBlock) {
  auto grid = [](int64_t paths, int64_t issuers) {
    return ColumnGrid(Spec(paths, issuers, 10, 0, 10, Output(false, true)));
  };
  EXPECT_EQ(grid(10000, 500), 1024);  // ST 20 MB, a wide block 43 MB
  EXPECT_EQ(grid(2100, 1000), 1024);  // ST just over 8 MiB
  EXPECT_EQ(grid(2000, 1000), 256);   // ST 8 MB, under 8 MiB: it stays in cache
  EXPECT_EQ(grid(3000, 50), 256);
  EXPECT_EQ(grid(20000, 500), 256);   // a wide block of 84 MB: over 64 MiB
  EXPECT_EQ(grid(1000, 20000), 256);  // A's block alone is 82 MB
  EXPECT_EQ(grid(1000000, 10), 256);
}

TEST(ShardPlannerTest, ChunkPayloadBytesIsTheSumOfWhatIsSent) {
  // full: P float32 values per column; basic statistics: V0, mean, stddev,
  // min and max, five float64 per column.
  EXPECT_EQ(ChunkPayloadBytes(Output(true, false), 1000, 7), 7 * 1000 * 4);
  EXPECT_EQ(ChunkPayloadBytes(Output(false, true), 1000, 7), 7 * 40);
  EXPECT_EQ(ChunkPayloadBytes(Output(true, true), 1000, 7), 7 * (1000 * 4 + 40));
  EXPECT_EQ(ChunkPayloadBytes(Output(false, false, true), 1000, 7), 0);
  // Each quantile, VaR and ES level adds one float64 per column.
  OutputSelection risk = Output(true, false);
  risk.statistics.quantiles = {0.01, 0.5, 0.99};
  risk.statistics.var = {0.99};
  risk.statistics.es = {0.99, 0.975};
  EXPECT_EQ(ChunkPayloadBytes(risk, 1000, 7), 7 * (1000 * 4 + (1 + 3 + 1 + 2) * 8));
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

}  // namespace
}  // namespace pricer
