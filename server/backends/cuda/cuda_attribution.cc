#include "server/backends/cuda/cuda_attribution.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "common/status_macros.h"
#include "server/backends/cuda/attribution_kernels.h"
#include "server/backends/cuda/cuda_status.h"
#include "server/model/attribution.h"

namespace pricer {
namespace {

// The parts of a slot's results block, each a block of rows x shard_columns
// float32 per contributed level: the contributions, their errors, delta, its
// errors, vega, its errors (those asked for, in that order).
enum Part { kContributions, kContributionErrors, kDelta, kDeltaErrors, kVega, kVegaErrors };

struct Layout {
  const JobSpec& spec;
  int64_t stride;  // the job's widest shard

  bool Asked(int part) const {
    const StatisticsSelection& s = spec.output.statistics;
    const bool value = part <= kContributionErrors || (part <= kDeltaErrors ? s.delta : s.vega);
    return value && (part % 2 == 0 || s.errors);
  }
  int64_t Rows(int part) const {
    return part <= kContributionErrors ? spec.position_rows() : spec.market.issuers();
  }
  // Where level l of `part` begins in the block.
  int64_t Offset(int part, int64_t l) const {
    const int64_t levels = spec.output.statistics.contribution_levels();
    int64_t offset = 0;
    for (int p = 0; p < part; ++p) {
      if (Asked(p)) offset += levels * Rows(p) * stride;
    }
    return offset + l * Rows(part) * stride;
  }
};

// The rows' issuers as offsets (N + 1) and rows listed by issuer, each
// issuer's in row order.
std::pair<std::vector<int32_t>, std::vector<int32_t>> RowsByIssuer(
    const std::vector<InstrumentTerms>& terms, int64_t issuers) {
  std::vector<int32_t> offsets(static_cast<size_t>(issuers + 1), 0), rows(terms.size());
  for (const InstrumentTerms& t : terms) ++offsets[static_cast<size_t>(t.issuer) + 1];
  for (size_t i = 1; i < offsets.size(); ++i) offsets[i] += offsets[i - 1];
  std::vector<int32_t> next(offsets.begin(), offsets.end() - 1);
  for (size_t r = 0; r < terms.size(); ++r) {
    rows[static_cast<size_t>(next[static_cast<size_t>(terms[r].issuer)]++)] =
        static_cast<int32_t>(r);
  }
  return {offsets, rows};
}

// dST/dsigma in place of the kept shocks (GBM with vega).
absl::Status TerminalPriceVega(const JobSpec& spec, const CudaJobBuffers::Attribution& b,
                               const std::string& device, MemoryAccount& memory, const float* st,
                               cudaStream_t stream, AttributionArrays* out) {
  if (out->dst.data() == nullptr) return absl::OkStatus();
  std::vector<double> sigma_t;
  for (const double sigma : spec.market.volatility) sigma_t.push_back(sigma * spec.market.maturity);
  RETURN_IF_ERROR(Upload(device, memory, b.sigma_t, sigma_t, stream, &out->sigma_t));
  return PRICER_CUDA_STATUS(
      device, cuda::LaunchTerminalPriceVega(st, spec.paths, spec.market.issuers(),
                                            std::sqrt(spec.market.maturity), out->sigma_t.data(),
                                            out->dst.data(), stream));
}

}  // namespace

ResidentAttribution AttributionArrays::Resident(int64_t rows) const {
  const double* today = derivatives_today.data();
  return ResidentAttribution{by_path.data(),
                             delta.data(),
                             vega.data(),
                             today,
                             today == nullptr ? nullptr : today + rows,
                             issuer_offsets.data(),
                             issuer_rows.data()};
}

absl::Status KeepShocks(const JobSpec& spec, const CudaJobBuffers& buffers,
                        const std::string& device, MemoryAccount& memory, const float* st,
                        cudaStream_t stream, AttributionArrays* out) {
  if (!buffers.attribution || buffers.attribution->dst_dsigma.elements == 0) {
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(AllocateOnDevice(memory, buffers.attribution->dst_dsigma, device, &out->dst));
  return PRICER_CUDA_STATUS(
      device,
      cudaMemcpyAsync(out->dst.data(), st,
                      static_cast<size_t>(spec.paths * spec.market.issuers()) * sizeof(float),
                      cudaMemcpyDeviceToDevice, stream));
}

absl::Status BuildAttribution(const JobSpec& spec, const CudaJobBuffers& buffers,
                              const std::string& device, MemoryAccount& memory, const float* st,
                              const float* x, cudaStream_t stream, AttributionArrays* out) {
  if (!buffers.attribution) return absl::OkStatus();
  const CudaJobBuffers::Attribution& b = *buffers.attribution;
  const StatisticsSelection& s = spec.output.statistics;
  const int64_t paths = spec.paths, rows = spec.position_rows();
  RETURN_IF_ERROR(AllocateOnDevice(memory, b.by_path, device, &out->by_path));
  RETURN_IF_ERROR(
      PRICER_CUDA_STATUS(device, cuda::LaunchByPath(x, paths, rows, out->by_path.data(), stream)));
  if (s.delta || s.vega) {
    RETURN_IF_ERROR(TerminalPriceVega(spec, b, device, memory, st, stream, out));
    const std::vector<InstrumentTerms> terms = RowTerms(spec, false);
    RowDerivatives today = DerivativesToday(spec);
    today.delta.insert(today.delta.end(), today.vega.begin(), today.vega.end());
    const auto [offsets, by_issuer] = RowsByIssuer(terms, spec.market.issuers());
    RETURN_IF_ERROR(Upload(device, memory, b.terms, terms, stream, &out->terms));
    RETURN_IF_ERROR(Upload(device, memory, b.today, today.delta, stream, &out->derivatives_today));
    RETURN_IF_ERROR(
        Upload(device, memory, b.issuer_offsets, offsets, stream, &out->issuer_offsets));
    RETURN_IF_ERROR(Upload(device, memory, b.issuer_rows, by_issuer, stream, &out->issuer_rows));
    RETURN_IF_ERROR(Upload(device, memory, b.spot, spec.market.spot, stream, &out->spot));
    if (s.delta) RETURN_IF_ERROR(AllocateOnDevice(memory, b.delta_by_path, device, &out->delta));
    if (s.vega) RETURN_IF_ERROR(AllocateOnDevice(memory, b.vega_by_path, device, &out->vega));
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        device,
        cuda::LaunchDerivatives(out->terms.data(), rows, st, out->spot.data(), out->dst.data(),
                                paths, out->delta.data(), out->vega.data(), stream)));
  }
  // The uploads above are from pageable memory that goes when this returns.
  return PRICER_CUDA_STATUS(device, cudaStreamSynchronize(stream));
}

absl::Status AttributeShard(const ResidentJob& job, ShardSlot& slot, const float* kept_sc,
                            const float* positions, int64_t kept, double discount) {
  const ResidentAttribution& t = job.attribution;
  if (t.x == nullptr) return absl::OkStatus();
  const JobSpec& spec = job.spec;
  const StatisticsSelection& s = spec.output.statistics;
  const Layout layout{spec, job.shard_columns};
  auto block = [&](int part, int64_t l) {
    return layout.Asked(part) ? slot.attribution.data() + layout.Offset(part, l) : nullptr;
  };
  const int64_t rows = spec.position_rows(), issuers = spec.market.issuers();
  const std::string& device = job.device;
  cudaStream_t compute = slot.compute.get();
  const std::vector<TailBand> bands = ContributionBands(s, spec.paths);
  int32_t* band_paths = slot.band_paths.data();
  for (size_t l = 0; l < bands.size(); ++l) {
    const auto level = static_cast<int64_t>(l);
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        device, cuda::LaunchBandPaths(kept_sc, spec.paths, kept, bands[l], band_paths, compute)));
    cuda::GatherArgs args{t.x, rows, band_paths, bands[l].size(), positions, job.today, discount};
    RETURN_IF_ERROR(PRICER_CUDA_STATUS(
        device, cuda::LaunchGather(args, kept, block(kContributions, level),
                                   block(kContributionErrors, level), nullptr, compute)));
    for (auto [asked, source, today, part] :
         {std::tuple{s.delta, t.delta, t.delta_today, int{kDelta}},
          std::tuple{s.vega, t.vega, t.vega_today, int{kVega}}}) {
      if (!asked) continue;
      args.source = source;
      args.today = today;
      RETURN_IF_ERROR(PRICER_CUDA_STATUS(
          device, cuda::LaunchGather(args, kept, nullptr, nullptr, slot.shares.data(), compute)));
      RETURN_IF_ERROR(PRICER_CUDA_STATUS(
          device, cuda::LaunchIssuerSums(slot.shares.data(), rows, kept, t.issuer_offsets,
                                         t.issuer_rows, issuers, block(part, level), compute)));
      if (!s.errors) continue;
      RETURN_IF_ERROR(PRICER_CUDA_STATUS(
          device, cuda::LaunchSensitivityErrors(args, kept, t.issuer_offsets, t.issuer_rows,
                                                issuers, block(part + 1, level), compute)));
    }
    band_paths += bands[l].size() * job.shard_columns;
  }
  return PRICER_CUDA_STATUS(
      device, cudaMemcpyAsync(slot.attribution_host->as<float>(), slot.attribution.data(),
                              static_cast<size_t>(slot.attribution.size()) * sizeof(float),
                              cudaMemcpyDeviceToHost, compute));
}

void CopyAttribution(const ResidentJob& job, const ShardSlot& slot, int64_t kept,
                     ColumnStatistics& out) {
  if (job.attribution.x == nullptr) return;
  const Layout layout{job.spec, job.shard_columns};
  const float* host = slot.attribution_host->as<float>();
  for (auto [part, to] :
       {std::pair{int{kContributions}, &out.contributions},
        std::pair{int{kContributionErrors}, &out.contributions_se},
        std::pair{int{kDelta}, &out.delta}, std::pair{int{kDeltaErrors}, &out.delta_se},
        std::pair{int{kVega}, &out.vega}, std::pair{int{kVegaErrors}, &out.vega_se}}) {
    if (!layout.Asked(part)) continue;
    for (size_t l = 0; l < to->size(); ++l) {
      const float* from = host + layout.Offset(part, static_cast<int64_t>(l));
      std::copy(from, from + kept * layout.Rows(part), (*to)[l].begin());
    }
  }
}

}  // namespace pricer
