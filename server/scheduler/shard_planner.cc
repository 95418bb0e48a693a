#include "server/scheduler/shard_planner.h"

#include <algorithm>

namespace pricer {
namespace {

int64_t RoundDown(int64_t x, int64_t m) { return x / m * m; }
int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace

int64_t ChunkPayloadBytes(const OutputSelection& output, int64_t paths, int64_t columns) {
  int64_t per_column = 0;
  if (output.full) per_column += paths * static_cast<int64_t>(sizeof(float));
  per_column += output.statistics.values_per_column() * static_cast<int64_t>(sizeof(double));
  return per_column * columns;
}

ShardPlan PlanShards(const JobSpec& spec) {
  ShardPlan plan;
  const int64_t columns = spec.column_end - spec.column_begin;
  plan.gemm_begin = RoundDown(spec.column_begin, kColumnAlignment);
  plan.gemm_end = std::min(spec.scenarios.columns(), RoundUp(spec.column_end, kColumnAlignment));

  plan.issuers_per_chunk = std::max<int64_t>(
      1, kMaxChunkPayloadBytes / (spec.paths * static_cast<int64_t>(sizeof(float))));
  const int64_t column_bytes = ChunkPayloadBytes(spec.output, spec.paths, 1);
  if (column_bytes == 0) return plan;  // terminal prices only: no shards to run
  const int64_t max_chunk = std::max<int64_t>(1, kMaxChunkPayloadBytes / column_bytes);
  plan.chunk_columns =
      spec.output.chunk_columns > 0 ? std::min(spec.output.chunk_columns, max_chunk) : max_chunk;
  plan.chunk_columns = std::min(plan.chunk_columns, columns);

  int64_t width = spec.shard_columns;
  if (width <= 0) {
    width = kTargetShardBytes / (spec.paths * static_cast<int64_t>(sizeof(float)));
  }
  width = std::max(kColumnAlignment, RoundUp(width, kColumnAlignment));
  width = std::min(width, RoundUp(plan.gemm_end - plan.gemm_begin, kColumnAlignment));
  plan.shard_columns = width;
  plan.shard_count = (plan.gemm_end - plan.gemm_begin + width - 1) / width;
  return plan;
}

Shard ShardAt(const ShardPlan& plan, const JobSpec& spec, int64_t index) {
  Shard shard;
  shard.index = index;
  shard.gemm_begin = plan.gemm_begin + index * plan.shard_columns;
  shard.gemm_end = std::min(plan.gemm_end, shard.gemm_begin + plan.shard_columns);
  shard.out_begin = std::max(shard.gemm_begin, spec.column_begin);
  shard.out_end = std::min(shard.gemm_end, spec.column_end);
  return shard;
}

}  // namespace pricer
