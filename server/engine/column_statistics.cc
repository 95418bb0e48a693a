#include "server/engine/column_statistics.h"

#include <algorithm>
#include <cmath>

namespace pricer {

void ColumnStatistics::Resize(int64_t columns) {
  mean.resize(columns);
  stddev.resize(columns);
  min.resize(columns);
  max.resize(columns);
}

void ColumnStatistics::SetColumn(int64_t k, const float* values, int64_t rows) {
  // Two passes over a column that is in cache: the mean, then the centred sum
  // of squares, which keeps the variance accurate when mean >> stddev.
  double sum = 0.0;
  float lo = values[0];
  float hi = values[0];
  for (int64_t p = 0; p < rows; ++p) {
    sum += values[p];
    lo = std::min(lo, values[p]);
    hi = std::max(hi, values[p]);
  }
  const double m = sum / static_cast<double>(rows);
  double squares = 0.0;
  for (int64_t p = 0; p < rows; ++p) {
    const double d = values[p] - m;
    squares += d * d;
  }
  mean[k] = m;
  stddev[k] = rows > 1 ? std::sqrt(squares / static_cast<double>(rows - 1)) : 0.0;
  min[k] = lo;
  max[k] = hi;
}

void ColumnStatistics::AppendRange(const ColumnStatistics& other, int64_t first, int64_t count) {
  auto append = [&](std::vector<double>& to, const std::vector<double>& from) {
    to.insert(to.end(), from.begin() + first, from.begin() + first + count);
  };
  append(mean, other.mean);
  append(stddev, other.stddev);
  append(min, other.min);
  append(max, other.max);
}

}  // namespace pricer
