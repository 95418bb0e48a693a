// How a job is cut into shards (one GEMM each) and reply chunks, and how it
// uses each device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/model/job_spec.h"

namespace pricer {

// The unit of reproducibility. Shards start at multiples of
// kColumnAlignment columns of A, the column range they compute is widened to
// such multiples (at most M), and a backend computes each aligned block of
// kColumnAlignment columns as one GEMM call of a fixed shape (the cpu: rows
// split by P and N only; cuda: one cuBLAS call per block). A BLAS call's
// rounding depends on its shape (OpenBLAS's Haswell kernels round a column
// differently by where it falls in the call's tiles: 1,024-column calls and
// 256-column calls differ in 2.3% of the elements at P = 10,000, N = 500), so
// fixing the call makes every column's value independent of the shard width,
// and so of the budget that chose it, of the requested column range, the
// number of devices and the threads per device. The extra columns are
// computed and dropped: at most 2 * (kColumnAlignment - 1) per request.
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
  int64_t issuers_per_chunk = 0;  // columns per ST or V chunk (PathColumns)
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

// Payload bytes of one chunk of `columns` scenario columns of `paths`
// values each, whose positions have `rows` rows on `issuers` issuers (for
// the contributions and sensitivities).
int64_t ChunkPayloadBytes(const OutputSelection& output, int64_t paths, int64_t rows,
                          int64_t issuers, int64_t columns);

// One chunk of the path matrices a job sends: columns [begin, end) of ST
// (issuers) or, with `values`, of a book's V (instruments).
struct PathColumns {
  bool values = false;
  int64_t begin = 0, end = 0;
};

// The plan of `spec` with its preferred shard width (JobSpec::shard_columns,
// else about `target_shard_bytes` of SC per shard).
ShardPlan PlanShards(const JobSpec& spec, int64_t target_shard_bytes = kTargetShardBytes);
// `plan` with shards `width` columns wide (a multiple of kColumnAlignment).
ShardPlan WithShardColumns(ShardPlan plan, int64_t width);
Shard ShardAt(const ShardPlan& plan, const JobSpec& spec, int64_t index);
// The path-matrix chunks of `spec`: ST's issuers when it asks for terminal
// prices, then V's instruments when it asks for instrument values; and
// chunk `index`'s columns.
int64_t PriceChunkCount(const ShardPlan& plan, const JobSpec& spec);
PathColumns PriceChunkAt(const ShardPlan& plan, const JobSpec& spec, int64_t index);

// How a job uses one device.
struct DevicePlan {
  std::string device;
  int64_t shards_in_flight = 0;  // 0: the job does not fit this device
  int64_t resident_bytes = 0;    // ST and per-job state
  int64_t shard_bytes = 0;       // per running shard
};

class Device;
// A device as the planner sees it: lost (a DeviceLost failure, `lost` says
// why) or usable, and the most one job may hold there: its budget, or less
// under a per-job cap (--max-job-bytes).
struct PlannerDevice {
  const Device* device = nullptr;
  absl::string_view lost;
  int64_t job_budget = 0;
};

// Narrows `plan`'s shards, halving the width down to kColumnAlignment at
// the least, until ST and one shard fit the per-job limit (job_budget) of
// every usable device on which the narrowest shard fits, then plans each
// device: how many shards of the job it runs at once (its job budget,
// `max_shards_in_flight` and the device's own limit). RESOURCE_EXHAUSTED
// naming the narrowest shard's bytes and the limit they break when the job
// fits no device; UNAVAILABLE when every device is lost.
absl::StatusOr<std::vector<DevicePlan>> PlanDevices(const JobSpec& spec,
                                                    const std::vector<PlannerDevice>& devices,
                                                    int64_t max_shards_in_flight, ShardPlan* plan);

}  // namespace pricer
