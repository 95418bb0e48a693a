// How a job is cut into shards (one GEMM each) and reply chunks.
#pragma once

#include <cstdint>

#include "server/model/job_spec.h"

namespace pricer {

// The unit of reproducibility. Shards start at multiples of this many columns
// of A, the column range they compute is widened to such multiples (at most
// M), and a backend computes each block [k * 256, min((k + 1) * 256, M)) of A
// as one GEMM call of that fixed shape. A BLAS call's rounding depends on its
// shape and threading (OpenBLAS splits columns between threads at points that
// depend on the call's width), so fixing the call makes every column's value
// independent of the shard width, the requested column range, the number of
// devices and the threads per device. The extra columns are computed and
// dropped: at most 2 * 255 per request.
inline constexpr int64_t kColumnAlignment = 256;

// Every reply payload stays below this, leaving room for the message framing
// under gRPC's default 4 MiB receive limit.
inline constexpr int64_t kMaxChunkPayloadBytes = 4 * 1024 * 1024 - 64 * 1024;

// A job's SC block per shard aims at this size: wide enough that the GEMM
// runs at full speed, small enough to keep the memory per shard modest.
inline constexpr int64_t kTargetShardBytes = 64 * 1024 * 1024;

struct ShardPlan {
  int64_t shard_columns = 0;  // width of every shard but possibly the last
  int64_t shard_count = 0;
  int64_t chunk_columns = 0;      // scenario columns per result chunk
  int64_t issuers_per_chunk = 0;  // issuers per terminal-prices chunk
  int64_t gemm_begin = 0;         // aligned range of A the shards compute
  int64_t gemm_end = 0;
};

// One shard: the GEMM covers [gemm_begin, gemm_end); the columns kept are
// [out_begin, out_end), inside the requested range.
struct Shard {
  int64_t index = 0;
  int64_t gemm_begin = 0, gemm_end = 0;
  int64_t out_begin = 0, out_end = 0;
};

// Payload bytes of one chunk of `columns` scenario columns.
int64_t ChunkPayloadBytes(const OutputSelection& output, int64_t paths, int64_t columns);

ShardPlan PlanShards(const JobSpec& spec);
Shard ShardAt(const ShardPlan& plan, const JobSpec& spec, int64_t index);

}  // namespace pricer
