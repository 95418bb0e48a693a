#include "client/lib/request_options.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace pricer {
namespace {

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

TEST(ReadMarketCsv, NamesTheBadRow) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "request_options_bad.csv").string();
  std::ofstream(path) << "spot,volatility\n100,0.2\n7;0.1\n";
  auto market = ReadMarketCsv(path);
  ASSERT_FALSE(market.ok());
  EXPECT_NE(market.status().message().find(":3: '7;0.1'"), absl::string_view::npos)
      << market.status();
  std::ofstream(path) << "price,vol\n1,2\n";
  EXPECT_NE(ReadMarketCsv(path).status().message().find("header 'spot,volatility'"),
            absl::string_view::npos);
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

}  // namespace
}  // namespace pricer
