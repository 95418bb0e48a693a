#include "server/scheduler/shard_planner.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/scheduler/device.h"

namespace pricer {
namespace {

int64_t RoundDown(int64_t x, int64_t m) { return x / m * m; }
int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The chunks of ST's issuers, and of V's instruments.
std::pair<int64_t, int64_t> PathChunkCounts(const ShardPlan& plan, const JobSpec& spec) {
  const int64_t per = plan.issuers_per_chunk;
  const auto instruments = static_cast<int64_t>(spec.instruments.size());
  return {spec.output.terminal_prices ? (spec.market.issuers() + per - 1) / per : 0,
          spec.output.instrument_values ? (instruments + per - 1) / per : 0};
}

}  // namespace

int64_t ChunkPayloadBytes(const OutputSelection& output, int64_t paths, int64_t rows,
                          int64_t issuers, int64_t columns) {
  int64_t per_column = 0;
  if (output.full) per_column += paths * static_cast<int64_t>(sizeof(float));
  per_column += output.statistics.values_per_column() * static_cast<int64_t>(sizeof(double));
  per_column += output.statistics.contribution_values_per_column(rows, issuers) *
                static_cast<int64_t>(sizeof(float));
  return per_column * columns;
}

ShardPlan PlanShards(const JobSpec& spec, int64_t target_shard_bytes) {
  ShardPlan plan;
  const int64_t columns = spec.column_end - spec.column_begin;
  constexpr int64_t a = kColumnAlignment;
  plan.gemm_begin = RoundDown(spec.column_begin, a);
  plan.gemm_end = std::min(spec.scenarios.columns(), RoundUp(spec.column_end, a));

  plan.issuers_per_chunk = std::max<int64_t>(
      1, kMaxChunkPayloadBytes / (spec.paths * static_cast<int64_t>(sizeof(float))));
  const int64_t column_bytes =
      ChunkPayloadBytes(spec.output, spec.paths, spec.position_rows(), spec.market.issuers(), 1);
  if (column_bytes == 0) return plan;  // terminal prices only: no shards to run
  const int64_t max_chunk = std::max<int64_t>(1, kMaxChunkPayloadBytes / column_bytes);
  plan.chunk_columns =
      spec.output.chunk_columns > 0 ? std::min(spec.output.chunk_columns, max_chunk) : max_chunk;
  plan.chunk_columns = std::min(plan.chunk_columns, columns);

  int64_t width = spec.shard_columns;
  if (width <= 0) {
    width = target_shard_bytes / (spec.paths * static_cast<int64_t>(sizeof(float)));
  }
  width = std::max(a, RoundUp(width, a));
  width = std::min(width, RoundUp(plan.gemm_end - plan.gemm_begin, a));
  return WithShardColumns(plan, width);
}

ShardPlan WithShardColumns(ShardPlan plan, int64_t width) {
  plan.shard_columns = width;
  plan.shard_count = (plan.gemm_end - plan.gemm_begin + width - 1) / width;
  return plan;
}

int64_t PriceChunkCount(const ShardPlan& plan, const JobSpec& spec) {
  const auto [prices, values] = PathChunkCounts(plan, spec);
  return prices + values;
}

PathColumns PriceChunkAt(const ShardPlan& plan, const JobSpec& spec, int64_t index) {
  const int64_t prices = PathChunkCounts(plan, spec).first;
  const bool values = index >= prices;
  const int64_t columns =
      values ? static_cast<int64_t>(spec.instruments.size()) : spec.market.issuers();
  const int64_t begin = (values ? index - prices : index) * plan.issuers_per_chunk;
  return {values, begin, std::min(begin + plan.issuers_per_chunk, columns)};
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

namespace {

// ST and one shard `width` columns wide within `d`'s per-job limit.
bool Fits(const JobSpec& spec, const PlannerDevice& d, int64_t width) {
  return d.lost.empty() &&
         d.device->ResidentBytes(spec) + d.device->ShardBytes(spec, width) <= d.job_budget;
}

// A lost device's plan has its bytes and no shards.
DevicePlan PlanDevice(const JobSpec& spec, const PlannerDevice& planned, const ShardPlan& plan,
                      int64_t max_shards_in_flight) {
  const Device& device = *planned.device;
  DevicePlan p;
  p.device = device.name();
  const AllocationTable table = device.Allocations(spec, std::max<int64_t>(1, plan.shard_columns));
  p.resident_bytes = table.resident_bytes();
  p.shard_bytes = plan.shard_count > 0 ? table.shard_bytes() : 0;
  const int64_t room = planned.job_budget - p.resident_bytes;
  if (!planned.lost.empty() || room < p.shard_bytes) return p;
  const int64_t by_memory = p.shard_bytes > 0 ? room / p.shard_bytes : INT64_MAX;
  p.shards_in_flight =
      std::min<int64_t>({by_memory, max_shards_in_flight, device.MaxShardsInFlight(),
                         std::max<int64_t>(1, plan.shard_count)});
  return p;
}

absl::Status FitsNoDevice(const JobSpec& spec, const std::vector<PlannerDevice>& devices,
                          const std::vector<DevicePlan>& plans, int64_t width) {
  int64_t needed = INT64_MAX;
  int64_t largest_budget = 0, largest_job_budget = 0;
  for (size_t d = 0; d < devices.size(); ++d) {
    if (!devices[d].lost.empty()) continue;
    needed = std::min(needed, plans[d].resident_bytes + plans[d].shard_bytes);
    largest_budget = std::max(largest_budget, devices[d].device->memory().budget());
    largest_job_budget = std::max(largest_job_budget, devices[d].job_budget);
  }
  const std::string cap = largest_job_budget < largest_budget
                              ? absl::StrCat(", and one job may hold at most ", largest_job_budget,
                                             " bytes of it (--max-job-bytes)")
                              : "";
  return absl::ResourceExhaustedError(absl::StrCat(
      "the job needs ", needed, " bytes on a device (terminal prices for ", spec.paths, " paths x ",
      spec.market.issuers(), " issuers",
      spec.instruments.empty()
          ? ""
          : absl::StrCat(" and instrument values for ", spec.instruments.size(), " instruments"),
      " plus one shard of ", width, " columns); the largest device budget is ", largest_budget,
      " bytes", cap));
}

}  // namespace

absl::StatusOr<std::vector<DevicePlan>> PlanDevices(const JobSpec& spec,
                                                    const std::vector<PlannerDevice>& devices,
                                                    int64_t max_shards_in_flight, ShardPlan* plan) {
  std::string lost;
  for (const PlannerDevice& d : devices) {
    if (!d.lost.empty()) absl::StrAppend(&lost, lost.empty() ? "" : "; ", d.lost);
  }
  if (std::all_of(devices.begin(), devices.end(),
                  [](const PlannerDevice& d) { return !d.lost.empty(); })) {
    return absl::UnavailableError(absl::StrCat("no device can take work: ", lost));
  }
  // Narrower shards need less memory. The devices the narrowest shard fits
  // decide the width (a device the job fits nowhere must not narrow it for
  // the others); when it fits none, the refusal names the narrowest shard.
  if (plan->shard_count > 0) {
    std::vector<const PlannerDevice*> targets;
    for (const PlannerDevice& d : devices) {
      if (Fits(spec, d, kColumnAlignment)) targets.push_back(&d);
    }
    int64_t width = targets.empty() ? kColumnAlignment : plan->shard_columns;
    while (width > kColumnAlignment &&
           !std::all_of(targets.begin(), targets.end(),
                        [&](const PlannerDevice* d) { return Fits(spec, *d, width); })) {
      width = std::max(kColumnAlignment, RoundDown(width / 2, kColumnAlignment));
    }
    *plan = WithShardColumns(*plan, width);
  }
  std::vector<DevicePlan> plans;
  bool any_fits = false;
  for (const PlannerDevice& d : devices) {
    plans.push_back(PlanDevice(spec, d, *plan, max_shards_in_flight));
    any_fits = any_fits || plans.back().shards_in_flight > 0;
  }
  if (!any_fits) {
    return FitsNoDevice(spec, devices, plans, plan->shard_count > 0 ? plan->shard_columns : 0);
  }
  return plans;
}

}  // namespace pricer
