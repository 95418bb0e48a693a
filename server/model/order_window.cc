#include "server/model/order_window.h"

#include <algorithm>

#include "server/model/attribution.h"

namespace pricer {

std::vector<int64_t> NeededRanks(const StatisticsSelection& selection, int64_t rows) {
  std::vector<int64_t> ranks;
  auto add = [&](double level) {
    const QuantileRank r = QuantileRankOf(level, rows);
    ranks.push_back(r.low);
    if (r.fraction > 0) ranks.push_back(r.low + 1);
  };
  for (double q : selection.quantiles) add(q);
  for (double a : selection.var) add(1.0 - a);
  for (double a : selection.es) add(1.0 - a);
  // The bands of the contributions (attribution.h): ES's tail ends at its
  // rank low; VaR's window needs both ends.
  for (const TailBand& band : ContributionBands(selection, rows)) {
    if (band.bounded) ranks.push_back(band.first);
    ranks.push_back(band.last);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

RankSpan NeededSpan(const StatisticsSelection& selection, int64_t rows) {
  const std::vector<int64_t> ranks = NeededRanks(selection, rows);
  return ranks.empty() ? RankSpan{} : RankSpan{ranks.front(), ranks.back()};
}

}  // namespace pricer
