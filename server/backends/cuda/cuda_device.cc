#include "server/backends/cuda/cuda_device.h"

#include <utility>

#include "server/backends/cuda/cuda_job.h"
#include "server/backends/cuda/kernels.h"

namespace pricer {

CudaDevice::CudaDevice(std::string name, int ordinal, int64_t budget_bytes)
    : Device(std::move(name), budget_bytes), ordinal_(ordinal) {}

CudaJobBuffers CudaDevice::BuffersOf(const JobSpec& spec, int64_t shard_columns) const {
  const int64_t paths = spec.paths;
  const int64_t issuers = spec.market.issuers();
  const int64_t w = shard_columns;
  const StatisticsSelection& selection = spec.output.statistics;
  CudaJobBuffers b;
  b.st = BufferOf<float>("terminal prices ST", paths * issuers);
  b.spot_f64 = BufferOf<double>("spot (float64)", issuers);
  b.order_levels = BufferOf<cuda::OrderLevel>("order levels", selection.order_levels());
  b.sort_offsets = BufferOf<int>("sort offsets", cuda::kSortColumns + 1);
  b.spot = BufferOf<float>("spot", issuers);
  b.drift = BufferOf<float>("drift", issuers);
  b.diffusion = BufferOf<float>("diffusion", issuers);
  if (spec.market.correlated()) {
    b.correlation = CudaJobBuffers::Correlation{
        BufferOf<float>("independent shocks Z", paths * issuers),
        BufferOf<float>("correlation factor L", issuers * issuers),
        BufferOf<char>("cuBLAS workspace (correlating ST)", kCublasWorkspaceBytes)};
  }
  b.cublas_workspace = BufferOf<char>("cuBLAS workspace", kCublasWorkspaceBytes);
  b.a_block = BufferOf<float>("scenario block A", issuers * w);
  b.sc_block = BufferOf<float>("result block SC", paths * w);
  if (selection.any()) {
    b.statistics = BufferOf<double>(
        "statistics block", (CudaJobBuffers::kFixedStatisticRows + selection.order_levels()) * w);
  }
  if (selection.order_levels() > 0) {
    b.sort =
        CudaJobBuffers::Sort{BufferOf<float>("sort keys", paths * cuda::kSortColumns),
                             BufferOf<float>("sort keys (alternate)", paths * cuda::kSortColumns),
                             BufferOf<char>("sort scratch", cuda::SortScratchBytes(paths))};
  }
  return b;
}

AllocationTable CudaDevice::Allocations(const JobSpec& spec, int64_t shard_columns) const {
  const CudaJobBuffers b = BuffersOf(spec, shard_columns);
  AllocationTable table{
      {b.st, b.spot_f64, b.order_levels, b.sort_offsets, b.spot, b.drift, b.diffusion},
      {b.cublas_workspace, b.a_block, b.sc_block}};
  if (const auto& c = b.correlation) {
    table.resident.insert(table.resident.end(), {c->shocks, c->factor, c->cublas_workspace});
  }
  if (b.statistics) table.per_shard.push_back(*b.statistics);
  if (const auto& s = b.sort) {
    table.per_shard.insert(table.per_shard.end(), {s->keys, s->keys_alternate, s->scratch});
  }
  return table;
}

absl::StatusOr<std::unique_ptr<DeviceJob>> CudaDevice::StartJob(const JobSpec& spec,
                                                                int64_t shard_columns) {
  return StartCudaJob(spec, *this, shard_columns);
}

}  // namespace pricer
