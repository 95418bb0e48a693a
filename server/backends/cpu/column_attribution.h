// The cpu backend's Euler contributions (server/model/attribution.h), a
// block of columns at a time: each column's band of paths (from the order
// statistics its ColumnReducer placed), then one pass over the union of the
// block's bands that reads each of those paths' rows of X once (from a
// row-major copy of X) and adds it to every column whose band holds it. The
// columns of a block share most of their tails, so X's rows come from memory
// once per block instead of once per column; each column still adds its
// paths in path order, so the bits do not depend on the block.
#pragma once

#include <cstdint>
#include <vector>

#include "server/backends/cpu/column_reducer.h"
#include "server/model/attribution.h"
#include "server/model/statistics.h"

namespace pricer {

// What a job's contributions and sensitivities read, row-major (path p's
// values of A's `rows` rows at p * rows).
struct AttributionInputs {
  int64_t paths = 0, rows = 0, issuers = 0;
  const float* x = nullptr;       // X
  const double* today = nullptr;  // X0
  double discount = 1;            // exp(-r T)
  // With delta (vega): dX/dS0 (dX/dsigma) of each row's issuer, X0's too,
  // and each row's issuer (attribution.h).
  const float* delta = nullptr;
  const float* vega = nullptr;
  const double* delta_today = nullptr;
  const double* vega_today = nullptr;
  const int64_t* issuer = nullptr;
};

// One per thread, like ColumnReducer.
class ColumnAttribution {
 public:
  // `kernel` as for ColumnReducer: every kernel gives the same bits.
  ColumnAttribution(const StatisticsSelection& selection, const AttributionInputs& inputs,
                    ReducerKernel kernel = ReducerKernel::kBest);

  // Starts a block of `columns` columns (at most kColumnAlignment).
  void Begin(int64_t columns);
  // Column c of the block: the paths of its bands, from its values (SC's,
  // `paths` of them) right after `reducer` reduced it.
  void Select(int64_t c, const float* values, const ColumnReducer& reducer);
  // The block's contributions and sensitivities: column c's positions at
  // positions + c * rows (A's block), its results into column first + c of
  // `out`.
  void Finish(const float* positions, int64_t first, ColumnStatistics* out);

 private:
  // Sums of `source` (X, dX/dS0 or dX/dsigma, row-major) over the bands
  // (path_offsets_, path_columns_, union_) of the block's columns for rows
  // [r0, r0 + width): sums_[c * 128 + r - r0] (and squares_ with
  // `squares`); 128 rows a pass keep a block's sums (256 KB) in L2
  // (measured against 16, 32, 64 and 256 at the seed example).
  void SumSlice(const float* source, int64_t r0, int64_t width, bool squares);
  // The union of level l's bands: path_offsets_, path_columns_, union_.
  void IndexBands(size_t l);
  // Level l's contributions, and the rows' shares of its sensitivities
  // added into shares_ ([c * issuers + issuer], per source).
  void SumLevel(size_t l, const float* positions, int64_t first, ColumnStatistics* out);
  // The standard errors of level l's sensitivity from `source`: per column,
  // per band path, the issuers' A-weighted sums of its rows.
  void SensitivityErrors(size_t l, const float* source, const float* positions, float* se) const;

  const bool errors_;
  bool avx512_ = false, avx2_ = false;  // the kernels `kernel` chose
  const AttributionInputs in_;
  const bool delta_, vega_;
  const std::vector<TailBand> bands_;
  int64_t columns_ = 0;
  std::vector<std::vector<int32_t>> band_paths_;  // [level][c * band size + n], ascending per c
  // The union of a level's bands: each path's columns (path_offsets_,
  // path_columns_) and the paths in some band, ascending.
  std::vector<int32_t> path_offsets_, path_columns_, union_;
  std::vector<int32_t> candidates_;  // a column's paths with values <= a band's end
  std::vector<double> sums_, squares_;
  std::vector<double> delta_shares_, vega_shares_;  // [c * issuers + i]
};

}  // namespace pricer
