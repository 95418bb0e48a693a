// PrecisionTarget: the rounds' paths, and when a column meets a target.
#include "server/model/precision_target.h"

#include <gtest/gtest.h>

#include <vector>

namespace pricer {
namespace {

TEST(PrecisionTargetTest, RoundsDoubleThePathsUpToMaxPaths) {
  PrecisionTarget t;
  t.max_paths = 10'000;
  EXPECT_EQ(t.RoundPaths(10'000), (std::vector<int64_t>{10'000}));
  t.max_paths = 79'999;
  EXPECT_EQ(t.RoundPaths(10'000), (std::vector<int64_t>{10'000, 20'000, 40'000}));
  t.max_paths = 80'000;
  EXPECT_EQ(t.RoundPaths(10'000), (std::vector<int64_t>{10'000, 20'000, 40'000, 80'000}));
  t.max_paths = 1'000'000;
  EXPECT_EQ(t.RoundPaths(1).back(), 524'288);  // 2^19
}

// Two columns of VaR 0.99 = 100 and -50 with intervals of half-width 1 and 2,
// and an ES 0.975 of 120 with standard error 0.6.
ColumnStatistics TwoColumns() {
  ColumnStatistics s;
  s.var = {{0, 0}, {100, -50}};  // the target's level is the second
  s.var_lo = {{0, 0}, {99, -52}};
  s.var_hi = {{0, 0}, {101, -48}};
  s.es = {{120, 60}};
  s.es_se = {{0.6, 0.6}};
  return s;
}

TEST(PrecisionTargetTest, AnIntervalsHalfWidthAgainstTheRelativeAndAbsoluteBounds) {
  const ColumnStatistics s = TwoColumns();
  PrecisionTarget t;
  t.statistic = PrecisionTarget::Statistic::kVar;
  t.level_index = 1;
  t.relative = 0.01;  // 1% of |VaR|: 1 and 0.5
  EXPECT_DOUBLE_EQ(t.Of(s, 0).error, 1.0);
  EXPECT_DOUBLE_EQ(t.Of(s, 1).value, -50.0);
  EXPECT_TRUE(t.Met(s, 0));
  EXPECT_FALSE(t.Met(s, 1));
  t.relative = 0.04;  // 4 and 2: both
  EXPECT_TRUE(t.Met(s, 1));
  t.absolute = 1.5;  // and both bounds must hold
  EXPECT_TRUE(t.Met(s, 0));
  EXPECT_FALSE(t.Met(s, 1));
  t.relative = 0;
  EXPECT_TRUE(t.Met(s, 0));
  EXPECT_FALSE(t.Met(s, 1));
}

TEST(PrecisionTargetTest, AStandardErrorAgainstTheRelativeBound) {
  const ColumnStatistics s = TwoColumns();
  PrecisionTarget t;
  t.statistic = PrecisionTarget::Statistic::kEs;
  t.relative = 0.005;  // 0.5% of ES: 0.6 and 0.3
  EXPECT_TRUE(t.Met(s, 0));
  EXPECT_FALSE(t.Met(s, 1));
}

TEST(PrecisionTargetTest, AZeroValueMeetsNoRelativeTarget) {
  ColumnStatistics s;
  s.mean = {0.0};
  s.mean_se = {1e-9};
  PrecisionTarget t;
  t.statistic = PrecisionTarget::Statistic::kMean;
  t.relative = 0.5;
  EXPECT_FALSE(t.Met(s, 0));
}

}  // namespace
}  // namespace pricer
