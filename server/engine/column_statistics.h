// Per-column statistics of a block of SC, accumulated in float64 while the
// column is still in cache.
#pragma once

#include <cstdint>
#include <vector>

namespace pricer {

// One entry per column, in column order.
struct ColumnStatistics {
  std::vector<double> mean;
  std::vector<double> stddev;  // sample standard deviation, divisor rows - 1
  std::vector<double> min;
  std::vector<double> max;

  int64_t columns() const { return static_cast<int64_t>(mean.size()); }
  // Makes room for `columns` columns (their statistics are then set one by
  // one, possibly from several threads).
  void Resize(int64_t columns);
  // Sets column k to the statistics of `rows` values.
  void SetColumn(int64_t k, const float* values, int64_t rows);
  // Appends columns [first, first + count) of `other`.
  void AppendRange(const ColumnStatistics& other, int64_t first, int64_t count);
};

}  // namespace pricer
