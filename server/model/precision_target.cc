#include "server/model/precision_target.h"

#include <cmath>

namespace pricer {

std::vector<int64_t> PrecisionTarget::RoundPaths(int64_t paths) const {
  std::vector<int64_t> rounds = {paths};
  while (rounds.back() <= max_paths / 2) rounds.push_back(rounds.back() * 2);
  return rounds;
}

PrecisionTarget::Estimate PrecisionTarget::Of(const ColumnStatistics& stats, int64_t k) const {
  const auto l = static_cast<size_t>(level_index);
  const auto c = static_cast<size_t>(k);
  switch (statistic) {
    case Statistic::kMean:
      return {stats.mean[c], stats.mean_se[c]};
    case Statistic::kStddev:
      return {stats.stddev[c], stats.stddev_se[c]};
    case Statistic::kQuantile:
      return {stats.quantiles[l][c], (stats.quantiles_hi[l][c] - stats.quantiles_lo[l][c]) / 2};
    case Statistic::kVar:
      return {stats.var[l][c], (stats.var_hi[l][c] - stats.var_lo[l][c]) / 2};
    case Statistic::kEs:
      return {stats.es[l][c], stats.es_se[l][c]};
    case Statistic::kNone:
      break;
  }
  return {};
}

bool PrecisionTarget::Met(const ColumnStatistics& stats, int64_t k) const {
  const Estimate e = Of(stats, k);
  if (relative > 0 && !(e.error <= relative * std::abs(e.value))) return false;
  if (absolute > 0 && !(e.error <= absolute)) return false;
  return true;
}

const char* StatisticName(PrecisionTarget::Statistic statistic) {
  switch (statistic) {
    case PrecisionTarget::Statistic::kMean:
      return "mean";
    case PrecisionTarget::Statistic::kStddev:
      return "stddev";
    case PrecisionTarget::Statistic::kQuantile:
      return "quantile";
    case PrecisionTarget::Statistic::kVar:
      return "var";
    case PrecisionTarget::Statistic::kEs:
      return "es";
    case PrecisionTarget::Statistic::kNone:
      break;
  }
  return "none";
}

}  // namespace pricer
