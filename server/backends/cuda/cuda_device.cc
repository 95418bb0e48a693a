#include "server/backends/cuda/cuda_device.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/backends/cuda/cuda_job.h"
#include "server/backends/cuda/cuda_shard_slot.h"
#include "server/backends/cuda/kernels.h"
#include "server/backends/cuda/pinned_memory.h"
#include "server/model/attribution.h"
#include "server/model/instruments.h"
#include "server/model/interval_ranks.h"

namespace pricer {

namespace {

// The contributions' buffers (CudaJobBuffers::Attribution) of `spec` with
// shards `w` wide; none without contributions.
std::optional<CudaJobBuffers::Attribution> AttributionBuffersOf(const JobSpec& spec, int64_t w) {
  const StatisticsSelection& selection = spec.output.statistics;
  if (selection.contribution_levels() == 0) return std::nullopt;
  const int64_t paths = spec.paths, issuers = spec.market.issuers();
  const int64_t rows = spec.position_rows();
  const bool gbm_vega = selection.vega && !spec.historical();
  int64_t band_paths = 0;
  for (const TailBand& band : ContributionBands(selection, paths)) band_paths += band.size();
  const int64_t results = selection.contribution_values_per_column(rows, issuers) * w;
  const bool sensitivities = selection.delta || selection.vega;
  return CudaJobBuffers::Attribution{
      BufferOf<float>("paths' rows of X (contributions)", paths * rows),
      BufferOf<float>("paths' dX/dS0 (delta)", selection.delta ? paths * rows : 0),
      BufferOf<float>("paths' dX/dsigma (vega)", selection.vega ? paths * rows : 0),
      BufferOf<float>("dST/dsigma (vega)", gbm_vega ? paths * issuers : 0),
      BufferOf<double>("sigma T (vega)", gbm_vega ? issuers : 0),
      BufferOf<InstrumentTerms>("rows' terms (sensitivities)", rows),
      BufferOf<double>("rows' derivatives today (sensitivities)", 2 * rows),
      BufferOf<int32_t>("rows by issuer (offsets)", issuers + 1),
      BufferOf<int32_t>("rows by issuer", rows),
      BufferOf<double>("spots (sensitivities)", issuers),
      BufferOf<int32_t>("bands' paths block", band_paths * w),
      BufferOf<float>("contributions block", results),
      BufferOf<double>("sensitivity shares block", sensitivities ? rows * w : 0),
      BufferOf<float>("pinned contributions block", results)};
}

}  // namespace

CudaDevice::CudaDevice(std::string name, int ordinal, int64_t budget_bytes, const GpuProfile& gpu,
                       std::shared_ptr<MemoryAccount> pinned_memory)
    : Device(std::move(name), budget_bytes),
      ordinal_(ordinal),
      gpu_(gpu),
      pinned_memory_(std::move(pinned_memory)),
      pinned_pool_(BlockPool::Make(pinned_memory_, CudaPinnedMemory(ordinal_, this->name()))),
      stream_pool_(std::make_shared<StreamPool>(ordinal_, this->name())) {}

std::string CudaDevice::kernels() const {
  return absl::StrCat("cuBLAS, ", gpu_.model.empty() ? "GPU" : gpu_.model, " (sm_",
                      gpu_.compute_capability, ")");
}

CudaJobBuffers CudaDevice::BuffersOf(const JobSpec& spec, int64_t shard_columns) const {
  const int64_t paths = spec.paths;
  const int64_t issuers = spec.market.issuers();
  const int64_t rows = spec.position_rows();  // of A: N, or K instruments
  const int64_t w = shard_columns;
  const StatisticsSelection& selection = spec.output.statistics;
  const auto cublas = [&](absl::string_view workspace, absl::string_view state) {
    return CudaJobBuffers::Cublas{BufferOf<char>(workspace, gpu_.cublas_workspace_bytes()),
                                  BufferOf<char>(state, gpu_.cublas_handle_bytes)};
  };
  CudaJobBuffers b;
  b.st = BufferOf<float>("terminal prices ST", paths * issuers);
  b.today_f64 = BufferOf<double>("values today X0 (float64)", rows);
  if (!spec.instruments.empty()) {
    b.book = CudaJobBuffers::Book{BufferOf<float>("instrument values V", paths * rows),
                                  BufferOf<InstrumentTerms>("instrument terms", rows)};
  }
  b.order_levels = BufferOf<cuda::OrderLevel>("order levels", selection.order_levels());
  b.spot = BufferOf<float>("spot", issuers);
  b.drift = BufferOf<float>("drift", issuers);
  b.diffusion = BufferOf<float>("diffusion", issuers);
  if (spec.market.correlated()) {
    b.correlation = CudaJobBuffers::Correlation{
        BufferOf<float>("independent shocks Z", paths * issuers),
        BufferOf<float>("correlation factor L", issuers * issuers),
        cublas("cuBLAS workspace (correlating ST)", "cuBLAS handle (correlating ST)")};
  }
  b.cublas = cublas("cuBLAS workspace", "cuBLAS handle");
  b.a_block = BufferOf<float>("scenario block A", rows * w);
  b.sc_block = BufferOf<float>("result block SC", selection.from_covariance ? 0 : paths * w);
  if (selection.from_covariance) {
    b.covariance =
        CudaJobBuffers::Covariance{BufferOf<double>("X covariance and means", rows * rows + rows),
                                   BufferOf<double>("scenario block A in float64", rows * w),
                                   BufferOf<double>("covariance block S A", rows * w)};
  }
  if (selection.any()) {
    b.statistics =
        BufferOf<double>("statistics block", CudaJobBuffers::StatisticRows(selection) * w);
  }
  if (selection.order_levels() > 0 &&
      !cuda::WindowApplies(WindowSpan(selection, paths, spec.antithetic), paths)) {
    b.sort =
        CudaJobBuffers::Sort{BufferOf<int>("sort offsets", cuda::kSortColumns + 1),
                             BufferOf<float>("sort keys", paths * cuda::kSortColumns),
                             BufferOf<float>("sort keys (alternate)", paths * cuda::kSortColumns),
                             BufferOf<char>("sort scratch", cuda::SortScratchBytes(paths))};
  }
  if (b.statistics) {
    b.statistics_host = BufferOf<double>("pinned statistics block", b.statistics->elements);
  }
  b.attribution = AttributionBuffersOf(spec, w);
  if (!spec.scenarios.generated()) b.a_host = BufferOf<float>("pinned scenario block", rows * w);
  if (spec.output.full) b.values_host = BufferOf<float>("pinned result block", paths * w);
  return b;
}

AllocationTable CudaDevice::Allocations(const JobSpec& spec, int64_t shard_columns) const {
  const CudaJobBuffers b = BuffersOf(spec, shard_columns);
  AllocationTable table{{b.st, b.today_f64, b.order_levels},
                        {b.cublas.workspace, b.cublas.state, b.a_block, b.sc_block}};
  if (b.sort) table.resident.push_back(b.sort->offsets);
  if (b.book) table.resident.insert(table.resident.end(), {b.book->values, b.book->terms});
  table.resident.insert(table.resident.end(), {b.spot, b.drift, b.diffusion});
  if (const auto& c = b.correlation) {
    table.resident.insert(table.resident.end(),
                          {c->shocks, c->factor, c->cublas.workspace, c->cublas.state});
  }
  if (b.statistics) table.per_shard.push_back(*b.statistics);
  if (const auto& s = b.sort) {
    table.per_shard.insert(table.per_shard.end(), {s->keys, s->keys_alternate, s->scratch});
  }
  for (const std::optional<Buffer>& host : {b.statistics_host, b.a_host, b.values_host}) {
    if (host) table.pinned_per_shard.push_back(*host);
  }
  if (const auto& c = b.covariance) {
    table.resident.push_back(c->moments);
    table.per_shard.insert(table.per_shard.end(), {c->a_doubles, c->products});
  }
  if (const auto& t = b.attribution) {
    table.resident.insert(table.resident.end(),
                          {t->by_path, t->delta_by_path, t->vega_by_path, t->dst_dsigma, t->sigma_t,
                           t->terms, t->today, t->issuer_offsets, t->issuer_rows, t->spot});
    table.per_shard.insert(table.per_shard.end(), {t->band_paths, t->results, t->shares});
    table.pinned_per_shard.push_back(t->results_host);
  }
  return table;
}

absl::StatusOr<std::unique_ptr<DeviceJob>> CudaDevice::StartJob(const JobSpec& spec,
                                                                int64_t shard_columns) {
  return StartCudaJob(spec, *this, shard_columns);
}

}  // namespace pricer
