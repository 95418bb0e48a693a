#include "client/lib/request_options.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pricer/v1/client_protocol.pb.h"
#include "tests/client/temp_file.h"

namespace pricer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BuildPriceRequest, SeedPresetIsTheOriginalExample) {
  PriceOptions options;
  options.preset = "seed";
  auto request = BuildPriceRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->market().generated().issuers(), 500);
  EXPECT_EQ(request->market().generated().spot_min(), 5.0);
  EXPECT_EQ(request->market().generated().spot_max(), 10.0);
  EXPECT_EQ(request->market().generated().volatility_min(), 0.0);
  EXPECT_EQ(request->market().generated().volatility_max(), 1.0);
  EXPECT_EQ(request->paths(), 10'000);
  EXPECT_EQ(request->seed(), 42u);
  EXPECT_EQ(request->rate(), 0.02);
  EXPECT_EQ(request->maturity(), 1.0);
  EXPECT_EQ(request->scenarios().generated().columns(), 1'000'000);
  EXPECT_EQ(request->scenarios().generated().value_min(), 0.0);
  EXPECT_EQ(request->scenarios().generated().value_max(), 1.0);
}

// The preset and the draws of every generated market and scenario set are
// client_protocol.proto's SeedPreset, which the Python client reads too.
TEST(BuildPriceRequest, SeedPresetIsTheClientProtocols) {
  const v1::SeedPreset& seed = v1::SeedPreset::default_instance();
  PriceOptions options;
  options.preset = "seed";
  auto request = BuildPriceRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  const v1::GeneratedMarket& market = request->market().generated();
  EXPECT_EQ(market.issuers(), seed.issuers());
  EXPECT_EQ(market.seed(), seed.seed());
  EXPECT_EQ(market.spot_min(), seed.spot_min());
  EXPECT_EQ(market.spot_max(), seed.spot_max());
  EXPECT_EQ(market.volatility_min(), seed.volatility_min());
  EXPECT_EQ(market.volatility_max(), seed.volatility_max());
  EXPECT_EQ(request->paths(), seed.paths());
  EXPECT_EQ(request->seed(), seed.seed());
  EXPECT_EQ(request->rate(), seed.rate());
  EXPECT_EQ(request->maturity(), seed.maturity());
  const v1::GeneratedScenarios& scenarios = request->scenarios().generated();
  EXPECT_EQ(scenarios.columns(), seed.scenarios());
  EXPECT_EQ(scenarios.seed(), seed.seed());
  EXPECT_EQ(scenarios.value_min(), seed.scenario_value_min());
  EXPECT_EQ(scenarios.value_max(), seed.scenario_value_max());
}

TEST(BuildPriceRequest, FlagsOverrideThePreset) {
  PriceOptions options;
  options.preset = "seed";
  options.scenarios = 20'000;
  options.paths = 123;
  options.rate = 0.05;
  options.column_begin = 10;
  auto request = BuildPriceRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->scenarios().generated().columns(), 20'000);
  EXPECT_EQ(request->paths(), 123);
  EXPECT_EQ(request->rate(), 0.05);
  EXPECT_EQ(request->market().generated().issuers(), 500);
  // --column-begin alone prices to the last column.
  EXPECT_EQ(request->column_begin(), 10);
  EXPECT_EQ(request->column_end(), 20'000);
}

TEST(BuildPriceRequest, MarketFileReplacesThePresetMarket) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "request_options_market.csv").string();
  std::ofstream(path) << "spot,volatility\n100,0.2\n50.5,0\n";
  PriceOptions options;
  options.preset = "seed";
  options.market_file = path;
  auto request = BuildPriceRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_TRUE(request->market().has_explicit_());
  EXPECT_EQ(request->market().explicit_().spot_size(), 2);
  EXPECT_EQ(request->market().explicit_().spot(1), 50.5);
  EXPECT_EQ(request->market().explicit_().volatility(0), 0.2);
  std::filesystem::remove(path);
}

TEST(BuildPriceRequest, SaysWhatIsMissing) {
  PriceOptions options;
  options.paths = 10;
  options.scenarios = 5;
  EXPECT_NE(BuildPriceRequest(options).status().message().find("no market"),
            absl::string_view::npos);
  options.issuers = 3;
  options.paths.reset();
  EXPECT_NE(BuildPriceRequest(options).status().message().find("no path count"),
            absl::string_view::npos);
  options.paths = 10;
  options.scenarios.reset();
  EXPECT_NE(BuildPriceRequest(options).status().message().find("no scenarios"),
            absl::string_view::npos);
  options.preset = "other";
  EXPECT_NE(BuildPriceRequest(options).status().message().find("--preset 'other'"),
            absl::string_view::npos);
}

TEST(BuildPriceRequest, CarriesCorrelationAntitheticAndStatistics) {
  TempFile file("request_options_request_correlation.csv", "1,0.3\n0.3,1\n");
  PriceOptions options;
  options.issuers = 2;
  options.paths = 100;
  options.scenarios = 10;
  options.correlation_file = file.path();
  options.antithetic = true;
  auto items = ParseStatisticsList("var:0.99,mean");
  ASSERT_TRUE(items.ok()) << items.status();
  options.statistics = *items;
  auto request = BuildPriceRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_THAT(request->market().correlation(), ElementsAre(1, 0.3, 0.3, 1));
  EXPECT_TRUE(request->antithetic());
  ASSERT_TRUE(request->output().has_statistics());
  EXPECT_TRUE(request->output().statistics().mean());
  EXPECT_FALSE(request->output().statistics().stddev());
  EXPECT_THAT(request->output().statistics().var(), ElementsAre(0.99));

  // Without them: independent issuers, plain paths, and no selection (the
  // server's default).
  PriceOptions plain = options;
  plain.correlation_file.reset();
  plain.antithetic = false;
  plain.statistics.clear();
  auto other = BuildPriceRequest(plain);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->market().correlation_size(), 0);
  EXPECT_FALSE(other->antithetic());
  EXPECT_FALSE(other->output().has_statistics());

  // A bad correlation file fails the request with the file's error.
  options.correlation_file = file.path() + ".missing";
  EXPECT_THAT(BuildPriceRequest(options).status().message(),
              HasSubstr("cannot open correlation file"));
}

// A labelled correlation follows the market file's issuers, whatever the
// order of either file.
TEST(BuildPriceRequest, OrdersALabelledCorrelationLikeTheMarket) {
  TempFile market("request_options_labelled_market.csv",
                  "issuer,spot,volatility\nB,100,0.2\nC,50,0.3\nA,70,0.1\n");
  TempFile correlation("request_options_labelled_correlation.csv",
                       ",A,B,C\nA,1,0.1,0.2\nB,0.1,1,0.3\nC,0.2,0.3,1\n");
  PriceOptions options;
  options.market_file = market.path();
  options.correlation_file = correlation.path();
  options.paths = 100;
  options.scenarios = 10;
  auto request = BuildPriceRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_THAT(request->market().explicit_().spot(), ElementsAre(100, 50, 70));
  EXPECT_THAT(request->market().correlation(), ElementsAre(1, 0.3, 0.1,    // B
                                                           0.3, 1, 0.2,    // C
                                                           0.1, 0.2, 1));  // A
  // A generated market has no labels: the file's order.
  options.market_file.reset();
  options.issuers = 3;
  request = BuildPriceRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_THAT(request->market().correlation(), ElementsAre(1, 0.1, 0.2, 0.1, 1, 0.3, 0.2, 0.3, 1));
}

TEST(BuildPriceRequest, CarriesThePriority) {
  PriceOptions options = SeedPreset();
  auto request = BuildPriceRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->priority(), 0);
  options.priority = -7;
  request = BuildPriceRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->priority(), -7);
}

TEST(BuildPriceRequest, PrecisionNamesTheLowestGemmPrecisionAllowed) {
  PriceOptions options = SeedPreset();
  auto fp32 = BuildPriceRequest(options);
  ASSERT_TRUE(fp32.ok()) << fp32.status();
  EXPECT_EQ(fp32->precision(), v1::PRECISION_FP32);
  for (const auto& [text, precision] :
       {std::pair{"fp32", v1::PRECISION_FP32}, std::pair{"tf32", v1::PRECISION_TF32},
        std::pair{"bf16", v1::PRECISION_BF16}}) {
    options.precision = text;
    auto request = BuildPriceRequest(options);
    ASSERT_TRUE(request.ok()) << request.status();
    EXPECT_EQ(request->precision(), precision) << text;
  }
  options.precision = "fp16";
  EXPECT_THAT(BuildPriceRequest(options).status().message(),
              HasSubstr("--precision 'fp16' is not one of fp32, tf32, bf16"));
}

TEST(BuildPriceRequest, ErrorsAskForTheErrorsAtTheirConfidence) {
  PriceOptions options = SeedPreset();
  auto items = ParseStatisticsList("mean,var:0.99");
  ASSERT_TRUE(items.ok()) << items.status();
  options.statistics = *items;
  auto plain = BuildPriceRequest(options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->output().statistics().errors());
  EXPECT_EQ(plain->output().statistics().error_confidence(), 0);

  options.errors = true;
  auto errors = BuildPriceRequest(options);
  ASSERT_TRUE(errors.ok()) << errors.status();
  EXPECT_TRUE(errors->output().statistics().errors());
  EXPECT_EQ(errors->output().statistics().error_confidence(), 0.95);
  EXPECT_THAT(errors->output().statistics().var(), ElementsAre(0.99));

  options.error_confidence = 0.5;
  errors = BuildPriceRequest(options);
  ASSERT_TRUE(errors.ok()) << errors.status();
  EXPECT_EQ(errors->output().statistics().error_confidence(), 0.5);
}

TEST(BuildPriceRequest, RefusesAnErrorConfidenceOutOfRangeOrWithoutErrors) {
  PriceOptions options = SeedPreset();
  auto items = ParseStatisticsList("mean");
  ASSERT_TRUE(items.ok()) << items.status();
  options.statistics = *items;
  options.errors = true;
  for (double confidence : {0.0, 1.0, -0.5, 1.5, std::nan("")}) {
    options.error_confidence = confidence;
    const absl::Status status = BuildPriceRequest(options).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << confidence;
    EXPECT_THAT(status.message(), HasSubstr("--error-confidence ")) << confidence;
    EXPECT_THAT(status.message(), HasSubstr("must be in (0, 1)")) << confidence;
  }
  options.error_confidence = 0.9;
  options.errors = false;
  EXPECT_THAT(BuildPriceRequest(options).status().message(),
              HasSubstr("--error-confidence needs --errors"));
}

// The seed preset with `stats` and the target `target` (--error-target).
PriceOptions Targeted(absl::string_view stats, absl::string_view target) {
  PriceOptions options = SeedPreset();
  auto items = ParseStatisticsList(stats);
  EXPECT_TRUE(items.ok()) << items.status();
  options.statistics = *items;
  auto parsed = ParseErrorTarget(target);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  options.error_target = *parsed;
  options.max_paths = 40000;
  return options;
}

TEST(BuildPriceRequest, ATargetAsksForItsStatisticWithErrors) {
  auto request = BuildPriceRequest(Targeted("mean,var:0.99", "var:.99=2%"));
  ASSERT_TRUE(request.ok()) << request.status();
  const v1::PrecisionTarget& target = request->target();
  EXPECT_EQ(target.statistic(), v1::PrecisionTarget::STATISTIC_VAR);
  EXPECT_EQ(target.level(), 0.99);
  EXPECT_EQ(target.relative(), 0.02);
  EXPECT_EQ(target.absolute(), 0);
  EXPECT_EQ(target.max_paths(), 40000);
  // A target implies the errors, at their confidence.
  EXPECT_TRUE(request->output().statistics().errors());
  EXPECT_EQ(request->output().statistics().error_confidence(), 0.95);
  PriceOptions confident = Targeted("mean", "mean=0.5");
  confident.error_confidence = 0.99;
  request = BuildPriceRequest(confident);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->target().absolute(), 0.5);
  EXPECT_EQ(request->output().statistics().error_confidence(), 0.99);
  // None without one.
  request = BuildPriceRequest(SeedPreset());
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_FALSE(request->has_target());
}

TEST(BuildPriceRequest, RefusesATargetTheRequestCannotMeet) {
  auto message = [](const PriceOptions& options) {
    const absl::Status status = BuildPriceRequest(options).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    return std::string(status.message());
  };
  EXPECT_EQ(message(Targeted("mean,var:0.975", "var:0.99=2%")),
            "--error-target var_0.99: the statistic is not among --stats (mean,var_0.975); add "
            "it there");
  PriceOptions no_max = Targeted("var:0.99", "var:0.99=2%");
  no_max.max_paths.reset();
  EXPECT_THAT(message(no_max), HasSubstr("--error-target var_0.99 needs --max-paths"));
  PriceOptions low_max = Targeted("var:0.99", "var:0.99=2%");
  low_max.max_paths = 5000;
  EXPECT_EQ(message(low_max), "--max-paths 5000 is below --paths 10000");
  PriceOptions full = Targeted("var:0.99", "var:0.99=2%");
  full.full = true;
  EXPECT_THAT(message(full), HasSubstr("it cannot write --full-out"));
  PriceOptions prices = Targeted("var:0.99", "var:0.99=2%");
  prices.terminal_prices = true;
  EXPECT_THAT(message(prices), HasSubstr("it cannot write --prices-out"));
  PriceOptions max_alone = SeedPreset();
  max_alone.max_paths = 40000;
  EXPECT_EQ(message(max_alone), "--max-paths needs --error-target");
}

}  // namespace
}  // namespace pricer
