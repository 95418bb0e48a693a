#include "client/lib/error_target.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;
using Kind = StatisticItem::Kind;

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<ErrorTarget> target = ParseErrorTarget(text);
  EXPECT_FALSE(target.ok()) << text;
  EXPECT_EQ(target.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(target.status().message());
}

TEST(ParseErrorTarget, APercentIsRelativeANumberAbsolute) {
  absl::StatusOr<ErrorTarget> var = ParseErrorTarget("var:0.99=2%");
  ASSERT_TRUE(var.ok()) << var.status();
  EXPECT_EQ(var->item.kind, Kind::kVar);
  EXPECT_EQ(var->item.level, 0.99);
  EXPECT_EQ(var->item.name, "var_0.99");
  EXPECT_EQ(var->relative, 0.02);
  EXPECT_EQ(var->absolute, 0);

  absl::StatusOr<ErrorTarget> mean = ParseErrorTarget(" mean = 0.5 ");
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ(mean->item.kind, Kind::kMean);
  EXPECT_EQ(mean->item.name, "mean");
  EXPECT_EQ(mean->relative, 0);
  EXPECT_EQ(mean->absolute, 0.5);
}

// The level is written and named as in --stats.
TEST(ParseErrorTarget, NamesTheLevelAsStatsDoes) {
  for (const auto& [text, name] :
       {std::pair{"var:.990=1%", "var_0.99"}, std::pair{"es:0.975=0.25", "es_0.975"},
        std::pair{"quantile:5e-1=1e-3", "quantile_0.5"}, std::pair{"stddev=10%", "stddev"}}) {
    absl::StatusOr<ErrorTarget> target = ParseErrorTarget(text);
    ASSERT_TRUE(target.ok()) << text << ": " << target.status();
    EXPECT_EQ(target->item.name, name) << text;
  }
}

TEST(ParseErrorTarget, RefusesWhatIsNotATarget) {
  EXPECT_THAT(ErrorOf("var:0.99"), HasSubstr("give STAT[:LEVEL]=X, e.g. var:0.99=2%"));
  EXPECT_EQ(ErrorOf("median=1%"),
            "--error-target: 'median' is not one of mean, stddev, min, max, quantile:L, var:L, "
            "es:L");
  EXPECT_EQ(ErrorOf("var:1.5=1%"), "--error-target: 'var:1.5': the level must be in (0, 1)");
  EXPECT_THAT(ErrorOf("min=1"), HasSubstr("min has no Monte Carlo error"));
  EXPECT_THAT(ErrorOf("max=1%"), HasSubstr("max has no Monte Carlo error"));
  for (const char* bound : {"var:0.99=0%", "var:0.99=-2%", "mean=0", "mean=-1", "mean=nan",
                            "mean=inf", "mean=", "mean=%", "mean=2%%", "mean=two"}) {
    EXPECT_THAT(ErrorOf(bound), HasSubstr("the bound must be a positive number")) << bound;
  }
}

TEST(ToPrecisionTarget, IsTheRequestsTarget) {
  absl::StatusOr<ErrorTarget> es = ParseErrorTarget("es:0.975=1.5%");
  ASSERT_TRUE(es.ok());
  const v1::PrecisionTarget target = ToPrecisionTarget(*es, 40000);
  EXPECT_EQ(target.statistic(), v1::PrecisionTarget::STATISTIC_ES);
  EXPECT_EQ(target.level(), 0.975);
  EXPECT_EQ(target.relative(), 0.015);
  EXPECT_EQ(target.absolute(), 0);
  EXPECT_EQ(target.max_paths(), 40000);
  EXPECT_TRUE(Targeted(target));
  EXPECT_FALSE(Targeted(v1::PrecisionTarget()));
  for (const auto& [text, statistic] :
       {std::pair{"mean=1", v1::PrecisionTarget::STATISTIC_MEAN},
        std::pair{"stddev=1", v1::PrecisionTarget::STATISTIC_STDDEV},
        std::pair{"quantile:0.5=1", v1::PrecisionTarget::STATISTIC_QUANTILE},
        std::pair{"var:0.5=1", v1::PrecisionTarget::STATISTIC_VAR}}) {
    EXPECT_EQ(ToPrecisionTarget(*ParseErrorTarget(text), 1).statistic(), statistic) << text;
  }
}

TEST(DescribeTarget, NamesTheStatisticAsTheCsvDoes) {
  EXPECT_EQ(DescribeTarget(ToPrecisionTarget(*ParseErrorTarget("var:.99=2%"), 1)),
            "var_0.99 <= 2%");
  EXPECT_EQ(DescribeTarget(ToPrecisionTarget(*ParseErrorTarget("var:.99=7%"), 1)),
            "var_0.99 <= 7%");  // not 7.000000000000001, 0.07 * 100
  EXPECT_EQ(DescribeTarget(ToPrecisionTarget(*ParseErrorTarget("mean=0.5"), 1)), "mean <= 0.5");
  v1::PrecisionTarget both = ToPrecisionTarget(*ParseErrorTarget("es:0.975=1%"), 1);
  both.set_absolute(0.25);
  EXPECT_EQ(DescribeTarget(both), "es_0.975 <= 1% and <= 0.25");
}

TEST(IsTargetPathCount, IsThePathsTimesAPowerOfTwoUpToTheMaximum) {
  v1::PrecisionTarget target;
  target.set_max_paths(5000);
  for (const int64_t rows : {1000, 2000, 4000}) {
    EXPECT_TRUE(IsTargetPathCount(rows, 1000, target)) << rows;
  }
  for (const int64_t rows : {0, 500, 1500, 3000, 8000, 1001}) {
    EXPECT_FALSE(IsTargetPathCount(rows, 1000, target)) << rows;
  }
}

}  // namespace
}  // namespace pricer
