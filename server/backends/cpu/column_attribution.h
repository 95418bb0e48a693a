// The cpu backend's Euler contributions (server/model/attribution.h): for
// each contributed level, the band of a column's paths (from the order
// statistics its ColumnReducer placed) and a gather-sum of those paths' rows
// of X, read from a row-major copy of X so that each path's R values are
// contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "server/backends/cpu/column_reducer.h"
#include "server/model/attribution.h"
#include "server/model/statistics.h"

namespace pricer {

// One per thread, like ColumnReducer.
class ColumnAttribution {
 public:
  // `by_path`: X row-major (`paths` x `rows`, path p's values at p * rows);
  // `today`: X0 (rows); `discount` = exp(-r T).
  ColumnAttribution(const StatisticsSelection& selection, int64_t paths, int64_t rows,
                    const float* by_path, const double* today, double discount);

  // Sets column k of `out`'s contributions for the column `values` (SC's,
  // `paths` of them) whose positions are `positions` (A's column, `rows`),
  // after `reducer` reduced it.
  void Compute(const float* values, const float* positions, const ColumnReducer& reducer, int64_t k,
               ColumnStatistics* out);

 private:
  const bool errors_;
  const int64_t paths_, rows_;
  const float* const by_path_;
  const double* const today_;
  const double discount_;
  const std::vector<TailBand> bands_;
  std::vector<int32_t> band_paths_;
  std::vector<double> sums_, squares_;
};

}  // namespace pricer
