// The cpu reducer's window bounds (SampleWindow): the sample's order
// statistics that SampleRangeOf names, whatever the sample.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "server/backends/cpu/column_reducer.h"

namespace pricer {
namespace {

std::vector<float> NormalSample(uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(kWindowSample);
  for (float& v : values) v = normal(generator);
  return values;
}

TEST(SampleWindowTest, BoundsAreTheSortedSamplesOrderStatistics) {
  // Lower-tail, two-sided and upper windows over samples the lower tail's
  // pivot reads well, misreads (every 16th value, its sub-sample, the
  // smallest; or the largest), and ties.
  std::vector<std::vector<float>> samples;
  for (uint64_t seed = 0; seed < 20; ++seed) samples.push_back(NormalSample(seed));
  std::vector<float> hidden = NormalSample(30), exposed = NormalSample(31);
  for (size_t i = 0; i < kWindowSample; i += 16) {
    hidden[i] = -10.0f - static_cast<float>(i);
    exposed[i] = 10.0f + static_cast<float>(i);
  }
  std::vector<float> tied(kWindowSample);
  for (size_t i = 0; i < tied.size(); ++i) tied[i] = static_cast<float>(i * 7 % 4);
  samples.insert(samples.end(), {hidden, exposed, tied, std::vector<float>(kWindowSample, 7.0f)});
  const float infinity = std::numeric_limits<float>::infinity();
  OrderSelect select;
  for (const RankSpan span :
       {RankSpan{99, 250}, RankSpan{0, 0}, RankSpan{4990, 5010}, RankSpan{9500, 9999}}) {
    SCOPED_TRACE("ranks " + std::to_string(span.first) + ".." + std::to_string(span.last));
    for (int attempt = 0; attempt < kWindowAttempts; ++attempt) {
      const SampleRange range = SampleRangeOf(span, 10'000, attempt);
      for (const std::vector<float>& values : samples) {
        std::vector<float> sorted = values;
        std::sort(sorted.begin(), sorted.end());
        const ColumnWindow window = SampleWindow(values.data(), range, select);
        EXPECT_EQ(window.bounded, range.bounded());
        EXPECT_EQ(window.lo, range.bounded() ? sorted[static_cast<size_t>(range.lo)] : -infinity);
        EXPECT_EQ(window.hi, range.capped() ? sorted[static_cast<size_t>(range.hi)] : infinity);
      }
    }
  }
}

}  // namespace
}  // namespace pricer
