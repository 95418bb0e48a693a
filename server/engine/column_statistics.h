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

#include <cstdint>
#include <vector>

namespace pricer {

// Which statistics a job asks for.
struct StatisticsSelection {
  bool mean = false;
  bool stddev = false;
  bool min = false;
  bool max = false;
  std::vector<double> quantiles;  // value quantile levels, each in [0, 1]
  std::vector<double> var;        // VaR confidence levels, each in (0, 1)
  std::vector<double> es;         // expected-shortfall confidence levels

  // Mean, stddev, min and max: what a request without a list gets.
  static StatisticsSelection Basic();
  bool any() const;
  // float64 values per column in a reply, V0 included.
  int64_t values_per_column() const;
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

  int64_t columns() const { return static_cast<int64_t>(v0.size()); }
  // float64 values held, over all arrays.
  int64_t values() const;
  // Room for `columns` columns of the selected statistics (set by a reducer).
  void Resize(const StatisticsSelection& selection, int64_t columns);
  // Appends columns [first, first + count) of `other`.
  void AppendRange(const ColumnStatistics& other, int64_t first, int64_t count);
};

// Reduces columns of `rows` values one at a time. Holds the scratch of the
// selection; use one per thread.
class ColumnReducer {
 public:
  // `discount` = exp(-r T).
  ColumnReducer(const StatisticsSelection& selection, int64_t rows, double discount);

  // Sets column k of `out` to the statistics of `values` (rows entries),
  // whose value today is `v0`.
  void Reduce(const float* values, double v0, int64_t k, ColumnStatistics* out);

 private:
  // The value quantile of level q in the sorted order statistics.
  struct Rank {
    int64_t low = 0;      // k = floor(h)
    double fraction = 0;  // h - k
  };
  Rank RankOf(double level) const;
  // A value above every needed order statistic (with high probability),
  // from a sample of the column.
  float TailThreshold(const float* values);
  // Places the order statistics that the ranks need into `sorted_`, a
  // partially ordered copy of the lower tail (values <= the threshold) or,
  // when that misses a rank or no tail is asked for, of all values.
  void PlaceOrderStatistics(const float* values);
  double Quantile(const Rank& rank) const;
  // Mean of the values <= q, over the selected copy.
  double TailMean(double q) const;

  const StatisticsSelection selection_;
  const int64_t rows_;
  const double discount_;
  std::vector<Rank> quantile_ranks_, var_ranks_, es_ranks_;
  std::vector<int64_t> needed_;  // order statistics to place, ascending
  bool tail_only_ = false;       // every needed rank is in the lower tail
  bool order_ = false;           // any order statistic needed at all
  std::vector<float> sorted_;    // partially ordered values
  std::vector<float> below_;     // the tail copy's buffer (rows entries)
  std::vector<float> sample_;
};

}  // namespace pricer
