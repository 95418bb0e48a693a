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
  void Reserve(int64_t columns);
  // Appends the statistics of one column of `rows` values.
  void AddColumn(const float* values, int64_t rows);
  // Appends columns [first, first + count) of `other`.
  void AppendRange(const ColumnStatistics& other, int64_t first, int64_t count);
};

}  // namespace pricer
