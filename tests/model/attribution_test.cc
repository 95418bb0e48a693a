// The bands of the contributions (server/model/attribution.h): their ranks,
// and the paths BandPaths takes against a stable sort of the column (ties
// by path), on columns full of ties.
#include "server/model/attribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace pricer {
namespace {

TEST(AttributionTest, BandsTakeTheRanksOfEsAndOfVarsWindow) {
  // P = 10,000: ES 0.975 averages the 250 smallest (9,999 x 0.025 = 249.975);
  // VaR 0.99's ranks are 99 and 100 (99.99), its window w = 50 each side.
  const TailBand es = EsTail(0.975, 10000);
  EXPECT_EQ(es.first, 0);
  EXPECT_EQ(es.last, 249);
  EXPECT_FALSE(es.bounded);
  EXPECT_EQ(VarWindowHalfWidth(10000), 50);
  const TailBand var = VarWindow(0.99, 10000);
  EXPECT_EQ(var.first, 49);
  EXPECT_EQ(var.last, 150);
  EXPECT_TRUE(var.bounded);
  // Clipped at the column's ends.
  const TailBand low = VarWindow(0.999, 100);
  EXPECT_EQ(low.first, 0);
  EXPECT_FALSE(low.bounded);
  EXPECT_EQ(VarWindow(0.001, 100).last, 99);
  StatisticsSelection s;
  s.es_contributions = {0.975};
  s.var_contributions = {0.99, 0.95};
  const std::vector<TailBand> bands = ContributionBands(s, 10000);
  ASSERT_EQ(bands.size(), 3u);
  EXPECT_EQ(bands[0].last, 249);
  EXPECT_EQ(bands[2].first, VarWindow(0.95, 10000).first);
}

TEST(AttributionTest, BandPathsAreTheStableSortsRanksWithTies) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    // Few distinct values, so that every band's ends tie.
    const int64_t rows = 1 + static_cast<int64_t>(random() % 200);
    const int distinct = 1 + static_cast<int>(random() % 8);
    std::vector<float> values(static_cast<size_t>(rows));
    for (float& v : values) v = static_cast<float>(random() % static_cast<unsigned>(distinct));
    std::vector<int32_t> order(values.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t p, int32_t q) { return values[p] < values[q]; });
    TailBand band;
    band.first = static_cast<int64_t>(random() % static_cast<unsigned>(rows));
    band.last =
        band.first + static_cast<int64_t>(random() % static_cast<unsigned>(rows - band.first));
    band.bounded = band.first > 0 && trial % 3 != 0;
    if (!band.bounded) band.first = 0;
    std::vector<int32_t> expected(order.begin() + band.first, order.begin() + band.last + 1);
    std::sort(expected.begin(), expected.end());
    std::vector<int32_t> got(static_cast<size_t>(band.size()), -1);
    const float lo = values[static_cast<size_t>(order[static_cast<size_t>(band.first)])];
    const float hi = values[static_cast<size_t>(order[static_cast<size_t>(band.last)])];
    std::vector<int32_t> candidates;
    for (int32_t p = 0; p < rows; ++p) {
      if (values[static_cast<size_t>(p)] <= hi) candidates.push_back(p);
    }
    BandPaths(values.data(), candidates.data(), static_cast<int64_t>(candidates.size()), band,
              band.bounded ? lo : -1e30f, hi, got.data());
    ASSERT_EQ(got, expected) << "trial " << trial << " rows " << rows << " band " << band.first
                             << ".." << band.last;
  }
}

}  // namespace
}  // namespace pricer
