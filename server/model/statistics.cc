#include "server/model/statistics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace pricer {
namespace {

void Append(std::vector<double>& to, const std::vector<double>& from, int64_t first,
            int64_t count) {
  if (from.empty()) return;
  to.insert(to.end(), from.begin() + first, from.begin() + first + count);
}

}  // namespace

StatisticsSelection StatisticsSelection::Basic() {
  StatisticsSelection s;
  s.mean = s.stddev = s.min = s.max = true;
  return s;
}

bool StatisticsSelection::any() const { return moments() || order_levels() > 0; }

int64_t StatisticsSelection::values_per_column() const {
  if (!any()) return 0;
  return 1 + mean + stddev + min + max + order_levels();
}

int64_t ColumnStatistics::values() const {
  size_t n = v0.size() + mean.size() + stddev.size() + min.size() + max.size();
  for (const auto* levels : {&quantiles, &var, &es}) {
    for (const auto& level : *levels) n += level.size();
  }
  return static_cast<int64_t>(n);
}

void ColumnStatistics::Resize(const StatisticsSelection& selection, int64_t columns) {
  const size_t n = static_cast<size_t>(columns);
  v0.assign(n, 0.0);
  mean.assign(selection.mean ? n : 0, 0.0);
  stddev.assign(selection.stddev ? n : 0, 0.0);
  min.assign(selection.min ? n : 0, 0.0);
  max.assign(selection.max ? n : 0, 0.0);
  quantiles.assign(selection.quantiles.size(), std::vector<double>(n));
  var.assign(selection.var.size(), std::vector<double>(n));
  es.assign(selection.es.size(), std::vector<double>(n));
}

void ColumnStatistics::AppendRange(const ColumnStatistics& other, int64_t first, int64_t count) {
  Append(v0, other.v0, first, count);
  Append(mean, other.mean, first, count);
  Append(stddev, other.stddev, first, count);
  Append(min, other.min, first, count);
  Append(max, other.max, first, count);
  for (auto [to, from] : {std::pair{&quantiles, &other.quantiles}, std::pair{&var, &other.var},
                          std::pair{&es, &other.es}}) {
    to->resize(from->size());
    for (size_t l = 0; l < from->size(); ++l) Append((*to)[l], (*from)[l], first, count);
  }
}

QuantileRank QuantileRankOf(double level, int64_t rows) {
  const double h = static_cast<double>(rows - 1) * level;
  QuantileRank rank;
  rank.low = std::min(rows - 1, static_cast<int64_t>(std::floor(h)));
  rank.fraction = rank.low == rows - 1 ? 0.0 : h - static_cast<double>(rank.low);
  return rank;
}

}  // namespace pricer
