#include "server/backends/cpu/cpu_paths.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "common/status_macros.h"
#include "server/backends/cpu/cpu_team.h"
#include "server/model/attribution.h"
#include "server/model/counter_rng.h"
#include "server/model/gbm.h"
#include "server/model/instruments.h"

namespace pricer {
namespace {

// Shocks between two polls of a job's stop: tens of ms on a core.
constexpr int64_t kShocksPerPoll = int64_t{1} << 22;
// Below this many shocks (about 0.2 ms on a core) ST is built on one thread.
constexpr int64_t kInlineShocks = int64_t{1} << 14;

// body(first, rows) for the blocks of `rows` of the job's paths, on the
// team; the blocks after a stop are skipped.
template <typename Body>
void ForEachPathBlock(const JobSpec& spec, int team, int64_t rows, StopPoll& stop, Body body) {
  const int64_t paths = spec.paths;
  const int64_t blocks = (paths + rows - 1) / rows;
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
  for (int64_t b = 0; b < blocks; ++b) {
    if (stop.Stopped()) continue;
    body(b * rows, std::min(rows, paths - b * rows));
  }
}

}  // namespace

absl::Status CpuPaths::Build(const JobSpec& spec, CpuDevice& device, const CpuJobBuffers& buffers,
                             MemoryAccount& memory) {
  ASSIGN_OR_RETURN(st_, device.blocks().Take(buffers.st));
  if (buffers.dst_dsigma.elements > 0) {
    RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory, buffers.dst_dsigma, &dst_dsigma_));
  }
  StopPoll stop(spec);
  absl::Status status;
  // One thread below kInlineShocks (the tiny jobs of bench/load_bench).
  const int64_t shocks = spec.paths * spec.market.issuers();
  WithTeam(device, shocks < kInlineShocks ? 1 : shocks, [&](int team) {
    if (spec.historical()) {  // R in place of the shocks
      const float* returns = spec.returns->shared_values()->data();
      std::copy(returns, returns + shocks, StValues());
    } else if (!spec.market.correlated()) {
      DrawShocks(spec, team, stop);
    } else {
      status = CorrelatedShocks(spec, buffers, memory, team, stop);
    }
    if (status.ok()) ShocksToPrices(spec, team, stop);
  });
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(stop.status());
  x_ = StValues();
  today_ = ValuesToday(spec);
  if (!spec.instruments.empty()) {
    RETURN_IF_ERROR(InstrumentValues(spec, device, buffers, memory));
  }
  RETURN_IF_ERROR(ByPath(spec, buffers, memory));
  return Derivatives(spec, device, buffers, memory);
}

absl::Status CpuPaths::Derivatives(const JobSpec& spec, CpuDevice& device,
                                   const CpuJobBuffers& buffers, MemoryAccount& memory) {
  const StatisticsSelection& s = spec.output.statistics;
  if (s.contribution_levels() == 0 || !(s.delta || s.vega)) return absl::OkStatus();
  if (s.delta) {
    RETURN_IF_ERROR(
        AccountedArray<float>::Allocate(memory, buffers.delta_by_path, &delta_by_path_));
  }
  if (s.vega) {
    RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory, buffers.vega_by_path, &vega_by_path_));
  }
  const std::vector<InstrumentTerms> terms = RowTerms(spec, false);
  const int64_t paths = spec.paths, rows = spec.position_rows();
  derivatives_today_ = DerivativesToday(spec);
  for (const InstrumentTerms& t : terms) row_issuers_.push_back(t.issuer);
  inputs_.delta = delta_by_path_.data();
  inputs_.vega = vega_by_path_.data();
  inputs_.delta_today = derivatives_today_.delta.data();
  inputs_.vega_today = derivatives_today_.vega.data();
  inputs_.issuer = row_issuers_.data();
  constexpr int64_t kTile = 64;  // paths a task, its rows written together
  const int64_t tiles = (paths + kTile - 1) / kTile;
  StopPoll stop(spec);
  WithTeam(device, paths * rows < kInlineShocks ? 1 : tiles, [&](int team) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
    for (int64_t tile = 0; tile < tiles; ++tile) {
      if (stop.Stopped()) continue;
      for (int64_t r = 0; r < rows; ++r) {
        const InstrumentTerms& t = terms[static_cast<size_t>(r)];
        const double spot = spec.market.spot[static_cast<size_t>(t.issuer)];
        const float* st = StValues() + t.issuer * paths;
        const float* dst =
            dst_dsigma_.data() == nullptr ? nullptr : dst_dsigma_.data() + t.issuer * paths;
        for (int64_t p = tile * kTile; p < std::min(paths, (tile + 1) * kTile); ++p) {
          if (s.delta)
            delta_by_path_.data()[p * rows + r] = static_cast<float>(PathDelta(t, st[p], spot));
          if (s.vega) {
            vega_by_path_.data()[p * rows + r] =
                static_cast<float>(PathVega(t, st[p], dst == nullptr ? 0.0 : dst[p]));
          }
        }
      }
    }
  });
  return stop.status();
}

absl::Status CpuPaths::ByPath(const JobSpec& spec, const CpuJobBuffers& buffers,
                              MemoryAccount& memory) {
  if (spec.output.statistics.contribution_levels() == 0) return absl::OkStatus();
  RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory, buffers.by_path, &by_path_));
  const int64_t paths = spec.paths, rows = spec.position_rows();
  inputs_ = AttributionInputs{
      paths,           rows,          spec.market.issuers(),
      by_path_.data(), today_.data(), std::exp(-spec.market.rate * spec.market.maturity)};
  // In tiles of 64 x 64, so that both sides stay in cache.
  constexpr int64_t kTile = 64;
  for (int64_t p0 = 0; p0 < paths; p0 += kTile) {
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
      for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) {
        for (int64_t p = p0; p < std::min(paths, p0 + kTile); ++p) {
          by_path_.data()[p * rows + r] = x_[r * paths + p];
        }
      }
    }
  }
  return absl::OkStatus();
}

void CpuPaths::Shocks(const JobSpec& spec, int64_t first, int64_t rows, float* out,
                      int64_t ld) const {
  const int64_t issuers = spec.market.issuers();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t block = 0; block * 4 < issuers; ++block) {
      float z[4];
      PathShocks4(spec.seed, static_cast<uint64_t>(first + r), static_cast<uint32_t>(block),
                  spec.antithetic, z);
      for (int64_t m = 0; m < 4 && block * 4 + m < issuers; ++m) {
        out[(block * 4 + m) * ld + r] = z[m];
      }
    }
  }
}

// Independent shocks straight into ST, in blocks of at most kPathBlock
// paths and kShocksPerPoll shocks (each shock depends on its path and
// issuer only, so the blocks do not change the numbers).
void CpuPaths::DrawShocks(const JobSpec& spec, int team, StopPoll& stop) {
  const int64_t rows = std::clamp<int64_t>(kShocksPerPoll / spec.market.issuers(), 16, kPathBlock);
  float* st = StValues();
  ForEachPathBlock(spec, team, rows, stop, [&](int64_t first, int64_t count) {
    Shocks(spec, first, count, st + first, spec.paths);
  });
}

// x = L z for blocks of kPathBlock paths: one fixed-shape GEMM per block
// (X = Z L^T), like the shard GEMMs, so rounding never depends on the
// threads.
absl::Status CpuPaths::CorrelatedShocks(const JobSpec& spec, const CpuJobBuffers& buffers,
                                        MemoryAccount& memory, int team, StopPoll& stop) {
  const int64_t paths = spec.paths;
  const int64_t issuers = spec.market.issuers();
  AccountedArray<float> scratch;
  RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory, buffers.shock_blocks, &scratch));
  float* st = StValues();
  ForEachPathBlock(spec, team, kPathBlock, stop, [&](int64_t first, int64_t rows) {
    float* z = scratch.data() + omp_get_thread_num() * kPathBlock * issuers;
    Shocks(spec, first, rows, z, rows);
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows),
                static_cast<blasint>(issuers), static_cast<blasint>(issuers), 1.0f, z,
                static_cast<blasint>(rows), spec.market.correlation_factor.data(),
                static_cast<blasint>(issuers), 0.0f, st + first, static_cast<blasint>(paths));
  });
  return absl::OkStatus();
}

void CpuPaths::ShocksToPrices(const JobSpec& spec, int team, StopPoll& stop) {
  const int64_t paths = spec.paths;
  const int64_t issuers = spec.market.issuers();
  const GbmConstants gbm = TerminalConstantsOf(spec);
  float* st = StValues();
  float* dst = dst_dsigma_.data();  // dST/dsigma, when the vega needs it
  const double t = spec.market.maturity, root_t = std::sqrt(t);
#pragma omp parallel for schedule(static) num_threads(team)
  for (int64_t i = 0; i < issuers; ++i) {
    if (stop.Stopped()) continue;
    const double sigma_t = spec.market.volatility[static_cast<size_t>(i)] * t;
    for (int64_t p = 0; p < paths; ++p) {
      const float x = st[i * paths + p];
      st[i * paths + p] = TerminalPrice(gbm.spot[i], gbm.drift[i], gbm.diffusion[i], x);
      if (dst != nullptr) {
        dst[i * paths + p] =
            static_cast<float>(TerminalPriceVega(st[i * paths + p], root_t, sigma_t, x));
      }
    }
  }
}

// V (P x K) from ST, an instrument at a time on the team; then X = V.
absl::Status CpuPaths::InstrumentValues(const JobSpec& spec, CpuDevice& device,
                                        const CpuJobBuffers& buffers, MemoryAccount& memory) {
  RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory, buffers.values, &values_));
  const std::vector<InstrumentTerms> terms = TermsAtHorizon(spec.market, spec.instruments);
  const auto count = static_cast<int64_t>(terms.size());
  StopPoll stop(spec);
  WithTeam(device, spec.paths * count < kInlineShocks ? 1 : count, [&](int team) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
    for (int64_t k = 0; k < count; ++k) {
      if (stop.Stopped()) continue;
      InstrumentValuesAtHorizon(terms, StValues(), spec.paths, k, k + 1, values_.data());
    }
  });
  x_ = values_.data();
  return stop.status();
}

}  // namespace pricer
