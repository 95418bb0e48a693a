// Pricing to a target precision: which statistic's error must be how small,
// and the paths of each round (docs/risk.md, "Pricing to a target precision").
//
// A targeted request prices every column with P paths first; the columns
// whose error misses the target are priced again with 2P, 4P, ... paths,
// each round a job of its own (server/service/targeted_run.h), until each
// column meets it or the next round would exceed max_paths. Shocks are a
// function of (seed, path, issuer), so a round's first paths are the same
// numbers and a column priced with P' paths this way equals a direct request
// with P' paths bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "server/model/statistics.h"

namespace pricer {

struct PrecisionTarget {
  enum class Statistic { kNone, kMean, kStddev, kQuantile, kVar, kEs };
  Statistic statistic = Statistic::kNone;
  // Quantile, var and es: the level, and its index among the selection's.
  double level = 0;
  int64_t level_index = 0;
  // Met when error <= relative |statistic| (if relative > 0) and
  // error <= absolute (if absolute > 0).
  double relative = 0;
  double absolute = 0;
  int64_t max_paths = 0;

  bool any() const { return statistic != Statistic::kNone; }
  // The paths of each round: paths, 2 paths, 4 paths, ... <= max_paths.
  std::vector<int64_t> RoundPaths(int64_t paths) const;
  // The statistic of column `k` of `stats` and its error: the standard error
  // (mean, stddev, es) or the half-width (upper - lower) / 2 of its interval
  // (quantile, var). `stats` holds the errors (StatisticsSelection::errors).
  struct Estimate {
    double value = 0;
    double error = 0;
  };
  Estimate Of(const ColumnStatistics& stats, int64_t k) const;
  bool Met(const ColumnStatistics& stats, int64_t k) const;
};

// "var 0.99", "mean": the statistic of `target`, for messages.
const char* StatisticName(PrecisionTarget::Statistic statistic);

}  // namespace pricer
