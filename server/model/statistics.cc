#include "server/model/statistics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>

namespace pricer {
namespace {

template <typename T>
void Append(std::vector<T>& to, const std::vector<T>& from, int64_t first, int64_t count) {
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
  const int64_t errors_per_column =
      errors ? mean + stddev + 2 * static_cast<int64_t>(quantiles.size() + var.size()) +
                   static_cast<int64_t>(es.size())
             : 0;
  return 1 + mean + stddev + min + max + order_levels() + errors_per_column;
}

int64_t ColumnStatistics::values() const {
  size_t n = v0.size() + mean.size() + stddev.size() + min.size() + max.size() + mean_se.size() +
             stddev_se.size();
  for (const auto* levels :
       {&quantiles, &var, &es, &quantiles_lo, &quantiles_hi, &var_lo, &var_hi, &es_se}) {
    for (const auto& level : *levels) n += level.size();
  }
  return static_cast<int64_t>(n);
}

int64_t ColumnStatistics::bytes() const {
  size_t floats = 0;
  ForEachContributionBlock(*this, *this, [&](const auto& levels, const auto&, int64_t) {
    for (const auto& level : levels) floats += level.size();
  });
  return values() * static_cast<int64_t>(sizeof(double)) +
         static_cast<int64_t>(floats * sizeof(float));
}

void ColumnStatistics::Resize(const StatisticsSelection& selection, int64_t columns, int64_t rows,
                              int64_t issuers,
                              const std::function<std::vector<float>(size_t floats)>& buffers) {
  const size_t n = static_cast<size_t>(columns);
  const auto levels = static_cast<size_t>(selection.contribution_levels());
  contribution_rows = levels > 0 ? rows : 0;
  sensitivity_rows = levels > 0 && (selection.delta || selection.vega) ? issuers : 0;
  const bool e = selection.errors;
  for (auto [to, asked, count] :
       {std::tuple{&contributions, true, rows}, std::tuple{&contributions_se, e, rows},
        std::tuple{&delta, selection.delta, issuers},
        std::tuple{&delta_se, e && selection.delta, issuers},
        std::tuple{&vega, selection.vega, issuers},
        std::tuple{&vega_se, e && selection.vega, issuers}}) {
    const size_t floats = n * static_cast<size_t>(count);
    to->resize(asked ? levels : 0);
    for (std::vector<float>& level : *to) {
      if (level.capacity() < floats && buffers) level = buffers(floats);
      level.assign(floats, 0.0f);
    }
  }
  v0.assign(n, 0.0);
  mean.assign(selection.mean ? n : 0, 0.0);
  stddev.assign(selection.stddev ? n : 0, 0.0);
  min.assign(selection.min ? n : 0, 0.0);
  max.assign(selection.max ? n : 0, 0.0);
  quantiles.assign(selection.quantiles.size(), std::vector<double>(n));
  var.assign(selection.var.size(), std::vector<double>(n));
  es.assign(selection.es.size(), std::vector<double>(n));
  mean_se.assign(e && selection.mean ? n : 0, 0.0);
  stddev_se.assign(e && selection.stddev ? n : 0, 0.0);
  for (auto [levels, count] :
       {std::pair{&quantiles_lo, selection.quantiles.size()},
        std::pair{&quantiles_hi, selection.quantiles.size()},
        std::pair{&var_lo, selection.var.size()}, std::pair{&var_hi, selection.var.size()},
        std::pair{&es_se, selection.es.size()}}) {
    levels->assign(e ? count : 0, std::vector<double>(n));
  }
}

void ColumnStatistics::AppendRange(const ColumnStatistics& other, int64_t first, int64_t count) {
  Append(v0, other.v0, first, count);
  Append(mean, other.mean, first, count);
  Append(stddev, other.stddev, first, count);
  Append(min, other.min, first, count);
  Append(max, other.max, first, count);
  Append(mean_se, other.mean_se, first, count);
  Append(stddev_se, other.stddev_se, first, count);
  Append(target_met, other.target_met, first, count);
  for (auto [to, from] :
       {std::pair{&quantiles, &other.quantiles}, std::pair{&var, &other.var},
        std::pair{&es, &other.es}, std::pair{&quantiles_lo, &other.quantiles_lo},
        std::pair{&quantiles_hi, &other.quantiles_hi}, std::pair{&var_lo, &other.var_lo},
        std::pair{&var_hi, &other.var_hi}, std::pair{&es_se, &other.es_se}}) {
    to->resize(from->size());
    for (size_t l = 0; l < from->size(); ++l) Append((*to)[l], (*from)[l], first, count);
  }
}

void PortfolioValues(const float* positions, int64_t issuers, const double* spot, int64_t count,
                     double* v0) {
  int64_t j = 0;
  for (; j + 4 <= count; j += 4) {
    const float* a = positions + j * issuers;
    double sums[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < issuers; ++i) {
      for (int l = 0; l < 4; ++l) sums[l] += a[l * issuers + i] * spot[i];
    }
    std::copy(sums, sums + 4, v0 + j);
  }
  for (; j < count; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < issuers; ++i) sum += positions[j * issuers + i] * spot[i];
    v0[j] = sum;
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
