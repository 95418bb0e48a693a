#include "server/backends/cpu/column_attribution.h"

#include <algorithm>
#include <cmath>

namespace pricer {

ColumnAttribution::ColumnAttribution(const StatisticsSelection& selection, int64_t paths,
                                     int64_t rows, const float* by_path, const double* today,
                                     double discount)
    : errors_(selection.errors),
      paths_(paths),
      rows_(rows),
      by_path_(by_path),
      today_(today),
      discount_(discount),
      bands_(ContributionBands(selection, paths)),
      sums_(static_cast<size_t>(rows)),
      squares_(static_cast<size_t>(rows)) {
  int64_t most = 0;
  for (const TailBand& band : bands_) most = std::max(most, band.size());
  band_paths_.resize(static_cast<size_t>(most));
}

void ColumnAttribution::Compute(const float* values, const float* positions,
                                const ColumnReducer& reducer, int64_t k, ColumnStatistics* out) {
  const size_t rows = static_cast<size_t>(rows_);
  for (size_t l = 0; l < bands_.size(); ++l) {
    const TailBand band = bands_[l];
    const float lo = band.bounded ? reducer.OrderStatistic(band.first) : 0.0f;
    BandPaths(values, paths_, band, lo, reducer.OrderStatistic(band.last), band_paths_.data());
    // The band's rows of X summed in float64, in path order.
    std::fill(sums_.begin(), sums_.end(), 0.0);
    std::fill(squares_.begin(), squares_.end(), 0.0);
    double* sums = sums_.data();
    double* squares = squares_.data();
    for (int64_t n = 0; n < band.size(); ++n) {
      const float* x = by_path_ + static_cast<int64_t>(band_paths_[static_cast<size_t>(n)]) * rows_;
      if (errors_) {
        for (size_t r = 0; r < rows; ++r) {
          const double v = x[r];
          sums[r] += v;
          squares[r] += v * v;
        }
      } else {
        for (size_t r = 0; r < rows; ++r) sums[r] += x[r];
      }
    }
    const double count = static_cast<double>(band.size());
    float* c = out->contributions[l].data() + static_cast<size_t>(k) * rows;
    for (size_t r = 0; r < rows; ++r) {
      c[r] = static_cast<float>(-positions[r] * (discount_ * sums[r] / count - today_[r]));
    }
    if (!errors_) continue;
    // The standard error of a mean over the band's paths (taken as
    // independent draws), scaled like it.
    float* se = out->contributions_se[l].data() + static_cast<size_t>(k) * rows;
    const double root = std::sqrt(count);
    for (size_t r = 0; r < rows; ++r) {
      se[r] = static_cast<float>(std::abs(positions[r]) * discount_ *
                                 ShiftedStddev(sums[r], squares[r], count) / root);
    }
  }
}

}  // namespace pricer
