// The cuda backend's Euler contributions and sensitivities
// (server/model/attribution.h): the row-major copies of X and of its
// derivatives, once per job, then per shard each kept column's band of paths
// (its order statistics by bisection, the ties in path order) and a gather
// over those paths' rows in float64, in path order, as the cpu backend adds
// them (column_attribution.h), one thread block per column.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "server/model/attribution.h"
#include "server/model/instruments.h"

namespace pricer::cuda {

// `by_path` (paths x rows, row-major) from `x` (column-major).
cudaError_t LaunchByPath(const float* x, int64_t paths, int64_t rows, float* by_path,
                         cudaStream_t stream);
// dST/dsigma in place: `shocks` (P x N, the shocks ST was built from) becomes
// ST (sqrt(T) x - sigma_i T), sigma_t[i] = sigma_i T.
cudaError_t LaunchTerminalPriceVega(const float* st, int64_t paths, int64_t issuers, double root_t,
                                    const double* sigma_t, float* shocks, cudaStream_t stream);
// dX/dS0 and dX/dsigma of each row (`terms`, `rows` of them), row-major,
// from ST, the issuers' spots and dST/dsigma (null: 0); either output may be
// null.
cudaError_t LaunchDerivatives(const InstrumentTerms* terms, int64_t rows, const float* st,
                              const double* spot, const float* dst_dsigma, int64_t paths,
                              float* delta, float* vega, cudaStream_t stream);

// The band's paths of each of `columns` columns of SC (`paths` values
// each): band.size() ascending indices per column, at out + column * size.
cudaError_t LaunchBandPaths(const float* sc, int64_t paths, int64_t columns, TailBand band,
                            int32_t* out, cudaStream_t stream);

// What a gather over a block of columns reads.
struct GatherArgs {
  const float* source = nullptr;  // paths x rows, row-major
  int64_t rows = 0;
  const int32_t* band_paths = nullptr;  // n per column
  int64_t n = 0;
  const float* positions = nullptr;  // A's columns, rows each
  const double* today = nullptr;     // the source's value today per row
  double discount = 1;
};
// Column j's -A[r, j] (discount mean_B source[., r] - today[r]) into
// values[j * rows + r] (float32, when `values` is not null) or shares (the
// same in float64), and with `errors` |A[r, j]| discount sd_B / sqrt(n).
cudaError_t LaunchGather(const GatherArgs& args, int64_t columns, float* values, float* errors,
                         double* shares, cudaStream_t stream);
// Each issuer's sum of its rows' shares (rows listed by issuer, in row
// order, at issuer_rows[issuer_offsets[i] .. issuer_offsets[i + 1]]) into
// out[j * issuers + i].
cudaError_t LaunchIssuerSums(const double* shares, int64_t rows, int64_t columns,
                             const int32_t* issuer_offsets, const int32_t* issuer_rows,
                             int64_t issuers, float* out, cudaStream_t stream);
// The standard error of each issuer's sensitivity: over the band's paths,
// the sample deviation of sum_{r on i} A[r, j] source[p, r], times
// discount / sqrt(n), into out[j * issuers + i].
cudaError_t LaunchSensitivityErrors(const GatherArgs& args, int64_t columns,
                                    const int32_t* issuer_offsets, const int32_t* issuer_rows,
                                    int64_t issuers, float* out, cudaStream_t stream);

}  // namespace pricer::cuda
