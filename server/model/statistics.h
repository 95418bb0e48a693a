// Per-column statistics of SC over the P paths, computed while a column is
// still in cache: the moments, exact order statistics (by selection, not a
// full sort) and the PnL risk measures.
//
// Conventions (docs/risk.md): V0[j] = sum_i A[i, j] S0[i];
// PnL[p, j] = exp(-r T) SC[p, j] - V0[j]. The quantile of level q of n values
// x_(0) <= ... <= x_(n-1) is x_(k) + (h - k) (x_(k+1) - x_(k)) with
// h = (n - 1) q and k = floor(h) (NumPy's default, "linear"). VaR_a is
// -quantile_{1-a}(PnL) and ES_a is -mean(PnL[p] | PnL[p] <= quantile_{1-a}
// (PnL)), both positive for a loss.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <tuple>
#include <vector>

#include "server/model/host_device.h"

namespace pricer {

// Which statistics a job asks for.
// The most issuers a job with StatisticsSelection::from_covariance may have:
// ST's covariance is 8 N^2 bytes (512 MiB here), and each block of 256 paths
// adds 2 x 256 N^2 flops to it.
inline constexpr int64_t kMaxCovarianceIssuers = 8192;

struct StatisticsSelection {
  bool mean = false;
  bool stddev = false;
  bool min = false;
  bool max = false;
  std::vector<double> quantiles;  // value quantile levels, each in [0, 1]
  std::vector<double> var;        // VaR confidence levels, each in (0, 1)
  std::vector<double> es;         // expected-shortfall confidence levels
  // Euler contributions (attribution.h): for each level, each of A's rows'
  // share of the column's ES (resp. VaR); each level is one of `es` (`var`).
  std::vector<double> es_contributions;
  std::vector<double> var_contributions;
  // Pathwise sensitivities of each contributed level's measure to each
  // issuer's spot (delta) and volatility (vega).
  bool delta = false;
  bool vega = false;
  // The Monte Carlo error of each statistic (statistic_errors.h): standard
  // errors of mean, stddev and ES, intervals of quantiles and VaR at
  // `error_confidence`.
  bool errors = false;
  double error_confidence = 0.95;
  // Mean and stddev from ST's column means and covariance instead of SC
  // (server/backends/host/covariance_moments.h): with mean and stddev only,
  // no errors, no full output, at most kMaxCovarianceIssuers issuers.
  bool from_covariance = false;

  // Mean, stddev, min and max: what a request without a list gets.
  static StatisticsSelection Basic();
  bool any() const;
  // Any of mean, stddev, min and max (one pass over a column).
  bool moments() const { return mean || stddev || min || max; }
  // The order statistics asked for: quantiles, VaR and ES levels.
  int64_t order_levels() const {
    return static_cast<int64_t>(quantiles.size() + var.size() + es.size());
  }
  // float64 values per column in a reply, V0 included.
  int64_t values_per_column() const;
  // The contributed levels: es_contributions' then var_contributions'.
  int64_t contribution_levels() const {
    return static_cast<int64_t>(es_contributions.size() + var_contributions.size());
  }
  // float32 values per column of the contributions, for A's `rows` rows,
  // and of the sensitivities, for `issuers` (their standard errors too with
  // `errors`).
  int64_t contribution_values_per_column(int64_t rows, int64_t issuers) const {
    return contribution_levels() * (rows + (delta + vega) * issuers) * (errors ? 2 : 1);
  }
};

// The statistics of a range of columns; arrays not selected stay empty.
struct ColumnStatistics {
  std::vector<double> v0;
  std::vector<double> mean;
  std::vector<double> stddev;  // sample standard deviation, divisor P - 1 (0 when P = 1)
  std::vector<double> min;
  std::vector<double> max;
  std::vector<std::vector<double>> quantiles;  // [level][column], levels as selected
  std::vector<std::vector<double>> var;
  std::vector<std::vector<double>> es;
  // With StatisticsSelection::errors, of the statistics selected: standard
  // errors, and the bounds of the intervals ([level][column]).
  std::vector<double> mean_se;
  std::vector<double> stddev_se;
  std::vector<std::vector<double>> quantiles_lo, quantiles_hi;
  std::vector<std::vector<double>> var_lo, var_hi;
  std::vector<std::vector<double>> es_se;
  // Of a targeted request: whether each column met the target (1) or
  // reached the most paths first (0); else empty.
  std::vector<uint8_t> target_met;
  // With contributions: per contributed level (contribution_levels()'s
  // order), A's `contribution_rows` rows x columns in float32, column-major,
  // and with errors their standard errors ([level][row + rows * column]).
  int64_t contribution_rows = 0;
  std::vector<std::vector<float>> contributions;
  std::vector<std::vector<float>> contributions_se;
  // With delta or vega: per contributed level, `sensitivity_rows` (the
  // issuers) x columns, the same way.
  int64_t sensitivity_rows = 0;
  std::vector<std::vector<float>> delta, delta_se, vega, vega_se;

  int64_t columns() const { return static_cast<int64_t>(v0.size()); }
  // float64 values held, over all arrays but the contributions.
  int64_t values() const;
  // Bytes held, the contributions' float32 included.
  int64_t bytes() const;
  // Room for `columns` columns of the selected statistics (set by a
  // reducer), with contributions to A's `rows` rows and sensitivities to
  // `issuers`, all zero. A contribution array keeps its memory when it has
  // room; else it comes from `buffers` when given (a used buffer of at
  // least the floats asked for, or an empty one that is then allocated).
  void Resize(const StatisticsSelection& selection, int64_t columns, int64_t rows = 0,
              int64_t issuers = 0,
              const std::function<std::vector<float>(size_t floats)>& buffers = nullptr);
  // Appends columns [first, first + count) of `other`'s statistics (not
  // its contributions: a chunk holds them as ContributionBlocks).
  void AppendRange(const ColumnStatistics& other, int64_t first, int64_t count);
};

// Each float32 block array of `a` paired with `b`'s (each a ColumnStatistics
// or a result_stream.h ContributionBlocks: the same names), and b's values per
// column: body(a's levels, b's levels, rows).
template <typename A, typename B, typename Body>
void ForEachContributionBlock(A& a, B& b, Body body) {
  for (auto [to, from, rows] :
       {std::tuple{&a.contributions, &b.contributions, b.contribution_rows},
        std::tuple{&a.contributions_se, &b.contributions_se, b.contribution_rows},
        std::tuple{&a.delta, &b.delta, b.sensitivity_rows},
        std::tuple{&a.delta_se, &b.delta_se, b.sensitivity_rows},
        std::tuple{&a.vega, &b.vega, b.sensitivity_rows},
        std::tuple{&a.vega_se, &b.vega_se, b.sensitivity_rows}}) {
    body(*to, *from, rows);
  }
}

// V0 of `count` columns of positions (column-major, `issuers` rows each):
// v0[j] = sum_i positions[i, j] spot[i] in float64 in the order of i, four
// columns at a time so that their chains of adds overlap (one at a time took
// a tenth of a column's statistics on the cpu backend).
void PortfolioValues(const float* positions, int64_t issuers, const double* spot, int64_t count,
                     double* v0);

// Where the quantile of `level` lies among `rows` sorted values: x_(low)
// interpolated towards x_(low + 1) by `fraction` (0 for the last value).
struct QuantileRank {
  int64_t low = 0;      // k = floor(h), h = (rows - 1) level
  double fraction = 0;  // h - k
};
QuantileRank QuantileRankOf(double level, int64_t rows);

// The formulas both backends apply to what they reduce, so a cpu and a cuda
// column differ only by the rounding of their sums.
// x_(k) + fraction (x_(k+1) - x_(k)).
PRICER_HOST_DEVICE inline double InterpolateQuantile(double low, double high, double fraction) {
  return fraction == 0 ? low : low + fraction * (high - low);
}
// ES's tail mean: the mean of the k = low + 1 smallest values, k fixed by
// the level's rank (QuantileRank::low), from the sum and count of the values
// <= q (the level's quantile, x_(low) <= q <= x_(low+1)). Values past the
// k-th counted there tie at q exactly (x_(low+1) = q), so they come off as
// (count - k) q. A tail of fixed size makes ES continuous in the values: a
// tie at q (equal float32 values, which differ between two GEMMs' rounding)
// moves it by rounding, not by one value's weight.
PRICER_HOST_DEVICE inline double TailMean(double sum_at_or_under, double count_at_or_under,
                                          double q, int64_t low) {
  const double k = static_cast<double>(low + 1);
  return (sum_at_or_under - (count_at_or_under - k) * q) / k;
}
// Mean and sample standard deviation (divisor n - 1, 0 for one value) from
// sums of (x - shift) and (x - shift)^2 over n values.
PRICER_HOST_DEVICE inline double ShiftedMean(double shift, double sum, double n) {
  return shift + sum / n;
}
PRICER_HOST_DEVICE inline double ShiftedStddev(double sum, double squares, double n) {
  if (n <= 1) return 0.0;
  const double variance = (squares - sum * sum / n) / (n - 1);
  return variance > 0 ? sqrt(variance) : 0.0;
}

}  // namespace pricer
