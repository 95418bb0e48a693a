// The cuda backend's kernels, callable from host C++: each launcher queues
// its work on `stream` and returns the launch's error (cudaGetLastError).
// Matrices are column-major like the rest of the engine.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "server/model/instruments.h"
#include "server/model/order_window.h"

namespace pricer::cuda {

// z[p, i] (P x N, leading dimension `paths`) from the shared Philox shocks
// (PathShocks4 in server/model/counter_rng.h).
cudaError_t LaunchShocks(uint64_t seed, bool antithetic, int64_t paths, int64_t issuers, float* z,
                         cudaStream_t stream);

// x[p, i] = TerminalPrice(spot[i], drift[i], diffusion[i], x[p, i]) in
// place over a P x N matrix (server/model/gbm.h).
cudaError_t LaunchTerminalPrices(int64_t paths, int64_t issuers, const float* spot,
                                 const float* drift, const float* diffusion, float* x,
                                 cudaStream_t stream);

// V (P x K): v[p, k] = InstrumentValue(terms[k], st[p, terms[k].issuer])
// in float64, rounded to float32 (server/model/instruments.h, as
// InstrumentValuesAtHorizon on the cpu backend).
cudaError_t LaunchInstrumentValues(int64_t paths, int64_t count, const InstrumentTerms* terms,
                                   const float* st, float* v, cudaStream_t stream);

// Columns [first, first + count) of a generated A, as the cpu backend draws
// them (ScenarioMatrix::CopyColumns): a[i, j] = UniformAt(seed, kScenarios,
// first + j, i, low, high), into a rows x count block.
cudaError_t LaunchGenerateScenarios(uint64_t seed, float low, float high, int64_t rows,
                                    int64_t first, int64_t count, float* a, cudaStream_t stream);

// v0[j] = sum_i a[i, j] spot[i] in float64 for `columns` columns of `rows`.
cudaError_t LaunchPortfolioValues(const float* a, int64_t rows, int64_t columns, const double* spot,
                                  double* v0, cudaStream_t stream);

// Per column of `paths` values: mean, sample stddev, min and max into
// out[0 * stride + j], out[1 * stride + j], ... (shifted float64 sums as in
// ColumnReducer, server/backends/cpu/column_reducer.h).
// The moments shortcut (server/backends/host/covariance_moments.h) of
// `columns` columns of A (`a`, float32, N = `issuers` rows): A in float64
// into `a_doubles`, for the caller's DGEMM S A into `products`.
cudaError_t LaunchToDoubles(const float* a, int64_t count, double* a_doubles, cudaStream_t stream);
// Then mean_j = m . A_j and stddev_j = sqrt(A_j^T (S A)_j) (0 for one
// path) into `out` rows 1 and 2 (stride `stride`), LaunchMoments' rows. One
// thread block per column, a fixed-order reduction: the same bits each run.
cudaError_t LaunchCovarianceMoments(const double* a_doubles, const double* products,
                                    const double* means, int64_t issuers, int64_t columns,
                                    int64_t paths, double* out, int64_t stride,
                                    cudaStream_t stream);
cudaError_t LaunchMoments(const float* sc, int64_t paths, int64_t columns, double* out,
                          int64_t stride, cudaStream_t stream);

// One order statistic a job asks for: the value quantile of `level` at
// `low` + `fraction` (its QuantileRank), turned into a value, a VaR or an ES.
struct OrderLevel {
  int64_t low = 0;
  double fraction = 0;
  int kind = 0;      // kQuantile, kValueAtRisk or kExpectedShortfall
  double level = 0;  // of the quantile of SC: 1 - a for VaR and ES
};
inline constexpr int kQuantile = 0;
inline constexpr int kValueAtRisk = 1;
inline constexpr int kExpectedShortfall = 2;

// Where the order statistics kernels put the levels' Monte Carlo errors
// (server/model/statistic_errors.h), when a job asks for them: two rows per
// level, out[(2 l) * stride + j] and out[(2 l + 1) * stride + j]: a
// quantile's interval (lower, upper), a VaR's (lower, upper), an ES's
// standard error (the first row only). z is the normal quantile of the
// confidence (ColumnErrors::NormalQuantile).
struct ErrorArgs {
  double* out = nullptr;  // none: no errors
  double z = 0;
  bool antithetic = false;
};

// With errors and the mean or stddev: the standard errors of the mean and of
// the stddev of each column into out[j] and out[stride + j], from the
// column's mean and stddev at moments[j] and moments[stride + j]
// (LaunchMoments' rows).
cudaError_t LaunchMomentErrors(const float* sc, int64_t paths, int64_t columns, bool antithetic,
                               const double* moments, double* out, int64_t stride,
                               cudaStream_t stream);

// The order statistics of `columns` columns of SC, read in place (no copy,
// no sort of a column): one thread block per column takes the bounds of a
// window from the column's first kWindowSample values (sorted in shared
// memory), counts and sums the values under it and keeps those in it in one
// pass, sorts the window alone in shared memory and reads the ranks from it
// (server/model/order_window.h, the cpu reducer's arithmetic). A column
// whose window misses the ranks on both attempts, or holds more than
// kWindowCapacity values, selects each needed rank by bisection over the
// whole column (32 counting passes). out[l * stride + j] as
// LaunchOrderStatistics, and their errors as ErrorArgs says. For a job
// where WindowApplies to the ranks of the levels and, with errors, of their
// intervals (WindowSpan).
inline constexpr int64_t kWindowCapacity = 4096;
// Whether the window kernel serves the needed ranks `span` of `paths`: the
// window comes from the sample (WindowFromSample) and attempt 0's expected
// size, with half again as margin, fits kWindowCapacity (for VaR 0.99 and ES
// 0.975: P up to about 38,000). Otherwise the columns are sorted.
bool WindowApplies(RankSpan span, int64_t paths);
cudaError_t LaunchWindowOrderStatistics(const float* sc, int64_t paths, int64_t columns,
                                        RankSpan span, const OrderLevel* levels, int count,
                                        const double* v0, double discount, double* out,
                                        int64_t stride, const ErrorArgs& errors,
                                        cudaStream_t stream);

// Sorts `columns` (<= kSortColumns) columns of `paths` values each, from
// `in` into one of `buffer0` / `buffer1` (both paths x kSortColumns);
// `*sorted` is set to the one holding the result. SortScratchBytes bounds the
// scratch it needs.
inline constexpr int64_t kSortColumns = 256;
int64_t SortScratchBytes(int64_t paths);
cudaError_t SortColumns(const float* in, int64_t paths, int64_t columns, const int* offsets,
                        float* buffer0, float* buffer1, void* scratch, int64_t scratch_bytes,
                        const float** sorted, cudaStream_t stream);
// offsets[k] = k * paths for k in [0, kSortColumns], the segments of SortColumns.
cudaError_t LaunchSegmentOffsets(int64_t paths, int* offsets, cudaStream_t stream);

// For sorted columns (SortColumns of `sc`, which the errors read for the
// units' sums): out[l * stride + j] for each of the `count` levels: the
// quantile itself, v0[j] - discount * quantile (VaR), or v0[j] - discount *
// mean(values <= quantile) (ES); their errors as ErrorArgs says.
cudaError_t LaunchOrderStatistics(const float* sorted, const float* sc, int64_t paths,
                                  int64_t columns, const OrderLevel* levels, int count,
                                  const double* v0, double discount, double* out, int64_t stride,
                                  const ErrorArgs& errors, cudaStream_t stream);

}  // namespace pricer::cuda
