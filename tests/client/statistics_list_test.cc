#include "client/lib/statistics_list.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pricer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = StatisticItem::Kind;

std::vector<std::string> Names(const std::vector<StatisticItem>& items) {
  std::vector<std::string> names;
  for (const StatisticItem& item : items) names.push_back(item.name);
  return names;
}

std::string ErrorOf(absl::string_view list) {
  absl::StatusOr<std::vector<StatisticItem>> items = ParseStatisticsList(list);
  EXPECT_FALSE(items.ok()) << list;
  EXPECT_EQ(items.status().code(), absl::StatusCode::kInvalidArgument) << list;
  return std::string(items.status().message());
}

TEST(ParseStatisticsList, KeepsTheOrderGiven) {
  auto items = ParseStatisticsList("var:0.99,max,quantile:0.5,es:0.975,mean,stddev,min");
  ASSERT_TRUE(items.ok()) << items.status();
  EXPECT_THAT(Names(*items),
              ElementsAre("var_0.99", "max", "quantile_0.5", "es_0.975", "mean", "stddev", "min"));
  ASSERT_EQ(items->size(), 7u);
  EXPECT_EQ((*items)[0].kind, Kind::kVar);
  EXPECT_EQ((*items)[0].level, 0.99);
  EXPECT_EQ((*items)[1].kind, Kind::kMax);
  EXPECT_EQ((*items)[2].kind, Kind::kQuantile);
  EXPECT_EQ((*items)[2].level, 0.5);
  EXPECT_EQ((*items)[3].kind, Kind::kEs);
  EXPECT_EQ((*items)[3].level, 0.975);
  EXPECT_EQ((*items)[4].kind, Kind::kMean);
  EXPECT_EQ((*items)[5].kind, Kind::kStddev);
  EXPECT_EQ((*items)[6].kind, Kind::kMin);
}

// The Python client names levels by the same rule: the shortest decimal
// that reads back as the same double, in fixed notation.
TEST(ParseStatisticsList, NamesTheLevelByItsShortestFixedDecimal) {
  auto items = ParseStatisticsList(
      "var:0.990,quantile:5e-1,es:.975,var:1e-5,quantile:0,quantile:1.0,es:0.1e-9,var:0.3");
  ASSERT_TRUE(items.ok()) << items.status();
  EXPECT_THAT(Names(*items), ElementsAre("var_0.99", "quantile_0.5", "es_0.975", "var_0.00001",
                                         "quantile_0", "quantile_1", "es_0.0000000001", "var_0.3"));
  EXPECT_EQ((*items)[0].level, 0.99);
  EXPECT_EQ((*items)[1].level, 0.5);
  EXPECT_EQ((*items)[2].level, 0.975);
  EXPECT_EQ((*items)[3].level, 1e-5);
  // Not 0.29999999999999999: the shortest that reads back.
  EXPECT_EQ(LevelName(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(LevelName(0.3), "0.3");
  EXPECT_EQ(LevelName(5e-324), "0." + std::string(323, '0') + "5");
}

TEST(ParseStatisticsList, RefusesAnItemGivenTwiceNamingBoth) {
  EXPECT_THAT(ErrorOf("mean,var:.99,max,var:0.990"),
              HasSubstr("--stats: 'var:.99' and 'var:0.990' are the same item (var_0.99)"));
  EXPECT_THAT(ErrorOf("mean,stddev, mean"),
              HasSubstr("--stats: 'mean' and 'mean' are the same item (mean)"));
  EXPECT_THAT(ErrorOf("es:1e-5,es:0.00001"),
              HasSubstr("'es:1e-5' and 'es:0.00001' are the same item (es_0.00001)"));
  // The same level under another kind is another item.
  auto items = ParseStatisticsList("var:0.99,quantile:0.99,es:0.99");
  ASSERT_TRUE(items.ok()) << items.status();
  EXPECT_THAT(Names(*items), ElementsAre("var_0.99", "quantile_0.99", "es_0.99"));
}

TEST(ParseStatisticsList, RefusesLevelsOutOfRangeNamingTheItem) {
  for (absl::string_view item : {"var:0", "var:1", "es:1.5", "es:-0.1", "var:nan", "es:inf"}) {
    EXPECT_THAT(ErrorOf(item),
                HasSubstr(absl::StrCat("--stats: '", item, "': the level must be in (0, 1)")));
  }
  for (absl::string_view item : {"quantile:1.01", "quantile:-1e-9", "quantile:nan"}) {
    EXPECT_THAT(ErrorOf(item),
                HasSubstr(absl::StrCat("--stats: '", item, "': the level must be in [0, 1]")));
  }
  EXPECT_TRUE(ParseStatisticsList("quantile:0,quantile:1,var:1e-300,es:0.9999999").ok());
}

TEST(ParseStatisticsList, IgnoresSpacesAndEmptyItems) {
  auto items = ParseStatisticsList(" mean , var:0.95,, max ");
  ASSERT_TRUE(items.ok()) << items.status();
  EXPECT_THAT(Names(*items), ElementsAre("mean", "var_0.95", "max"));
}

TEST(ParseStatisticsList, ErrorsNameTheBadItem) {
  EXPECT_THAT(ErrorOf("mean,median"),
              HasSubstr("--stats: 'median' is not one of mean, stddev, min, max, quantile:L, "
                        "var:L, es:L"));
  EXPECT_THAT(ErrorOf("mean,var:high"),
              HasSubstr("--stats: 'var:high': the level 'high' is not a number"));
  EXPECT_THAT(ErrorOf("es:"), HasSubstr("'es:': the level '' is not a number"));
  EXPECT_THAT(ErrorOf("quantile"), HasSubstr("'quantile' is not one of"));
  EXPECT_THAT(ErrorOf("mean:0.5"), HasSubstr("'mean:0.5' is not one of"));
  EXPECT_THAT(ErrorOf("Mean"), HasSubstr("'Mean' is not one of"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("--stats: the list is empty"));
  EXPECT_THAT(ErrorOf(" , "), HasSubstr("--stats: the list is empty"));
}

TEST(ToSelection, SetsTheFlagsAndTheLevelsInOrder) {
  auto items = ParseStatisticsList("es:0.975,stddev,quantile:0.9,var:0.99,quantile:0.1,es:0.99");
  ASSERT_TRUE(items.ok()) << items.status();
  const v1::StatisticsSelection selection = ToSelection(*items);
  EXPECT_FALSE(selection.mean());
  EXPECT_TRUE(selection.stddev());
  EXPECT_FALSE(selection.min());
  EXPECT_FALSE(selection.max());
  EXPECT_THAT(selection.quantiles(), ElementsAre(0.9, 0.1));
  EXPECT_THAT(selection.var(), ElementsAre(0.99));
  EXPECT_THAT(selection.es(), ElementsAre(0.975, 0.99));

  auto basic = ParseStatisticsList("max,min,mean,stddev");
  ASSERT_TRUE(basic.ok()) << basic.status();
  const v1::StatisticsSelection four = ToSelection(*basic);
  EXPECT_TRUE(four.mean() && four.stddev() && four.min() && four.max());
  EXPECT_EQ(four.quantiles_size() + four.var_size() + four.es_size(), 0);
}

v1::LevelValues* AddLevel(google::protobuf::RepeatedPtrField<v1::LevelValues>* to, double level,
                          std::vector<double> values) {
  v1::LevelValues* l = to->Add();
  l->set_level(level);
  l->mutable_values()->Assign(values.begin(), values.end());
  return l;
}

TEST(ValuesOf, FindsEachItemByKindAndLevel) {
  v1::ColumnStatistics s;
  for (double v : {1.0, 2.0}) s.add_mean(v);
  for (double v : {3.0, 4.0}) s.add_max(v);
  AddLevel(s.mutable_var(), 0.99, {10, 11});
  AddLevel(s.mutable_var(), 0.95, {12, 13});
  AddLevel(s.mutable_quantiles(), 0.95, {20, 21});
  AddLevel(s.mutable_es(), 0.975, {30, 31});

  auto items = ParseStatisticsList("mean,max,var:0.95,var:0.990,quantile:0.95,es:0.975,stddev");
  ASSERT_TRUE(items.ok()) << items.status();
  std::vector<std::vector<double>> found;
  for (const StatisticItem& item : *items) {
    const google::protobuf::RepeatedField<double>* values = ValuesOf(s, item);
    ASSERT_NE(values, nullptr) << item.name;
    found.emplace_back(values->begin(), values->end());
  }
  EXPECT_THAT(found, ElementsAre(ElementsAre(1, 2), ElementsAre(3, 4), ElementsAre(12, 13),
                                 ElementsAre(10, 11), ElementsAre(20, 21), ElementsAre(30, 31),
                                 ElementsAre()));  // stddev: not in the reply, empty

  // A level the reply lacks, or present only under another kind: none.
  for (absl::string_view missing : {"var:0.975", "es:0.99", "quantile:0.99"}) {
    auto item = ParseStatisticsList(missing);
    ASSERT_TRUE(item.ok()) << item.status();
    EXPECT_EQ(ValuesOf(s, item->front()), nullptr) << missing;
  }
}

TEST(WithErrors, FollowsEachStatisticByItsErrors) {
  auto items = ParseStatisticsList("mean,stddev,min,max,quantile:0.5,var:.99,es:0.975");
  ASSERT_TRUE(items.ok()) << items.status();
  const std::vector<StatisticItem> columns = WithErrors(*items);
  EXPECT_THAT(Names(columns),
              ElementsAre("mean", "mean_se", "stddev", "stddev_se", "min", "max", "quantile_0.5",
                          "quantile_0.5_lo", "quantile_0.5_hi", "var_0.99", "var_0.99_lo",
                          "var_0.99_hi", "es_0.975", "es_0.975_se"));
  using Part = StatisticItem::Part;
  std::vector<Part> parts;
  for (const StatisticItem& column : columns) parts.push_back(column.part);
  EXPECT_THAT(parts, ElementsAre(Part::kValue, Part::kStandardError, Part::kValue,
                                 Part::kStandardError, Part::kValue, Part::kValue, Part::kValue,
                                 Part::kLower, Part::kUpper, Part::kValue, Part::kLower,
                                 Part::kUpper, Part::kValue, Part::kStandardError));
  // An error is of its statistic's kind and level.
  EXPECT_EQ(columns[10].kind, Kind::kVar);
  EXPECT_EQ(columns[10].level, 0.99);
  EXPECT_EQ(columns[13].kind, Kind::kEs);
  EXPECT_EQ(columns[13].level, 0.975);
}

TEST(ValuesOf, FindsEachErrorByKindLevelAndPart) {
  v1::ColumnStatistics s;
  for (double v : {1.0, 2.0}) s.add_mean(v);
  for (double v : {0.1, 0.2}) s.add_mean_standard_error(v);
  for (double v : {3.0, 4.0}) s.add_min(v);
  v1::LevelValues* var = AddLevel(s.mutable_var(), 0.99, {10, 11});
  for (double v : {9.0, 9.5}) var->add_lower(v);
  for (double v : {10.5, 12.0}) var->add_upper(v);
  AddLevel(s.mutable_var(), 0.95, {12, 13});  // without errors
  v1::LevelValues* q = AddLevel(s.mutable_quantiles(), 0.5, {20, 21});
  for (double v : {19.0, 20.0}) q->add_lower(v);
  for (double v : {21.0, 22.0}) q->add_upper(v);
  v1::LevelValues* es = AddLevel(s.mutable_es(), 0.975, {30, 31});
  for (double v : {0.3, 0.4}) es->add_standard_error(v);

  auto items = ParseStatisticsList("mean,min,var:0.99,quantile:0.5,es:0.975,var:0.95,stddev");
  ASSERT_TRUE(items.ok()) << items.status();
  std::vector<std::vector<double>> found;
  for (const StatisticItem& column : WithErrors(*items)) {
    const google::protobuf::RepeatedField<double>* values = ValuesOf(s, column);
    ASSERT_NE(values, nullptr) << column.name;
    found.emplace_back(values->begin(), values->end());
  }
  EXPECT_THAT(found,
              ElementsAre(ElementsAre(1, 2), ElementsAre(0.1, 0.2),                         // mean
                          ElementsAre(3, 4),                                                // min
                          ElementsAre(10, 11), ElementsAre(9, 9.5), ElementsAre(10.5, 12),  // var
                          ElementsAre(20, 21), ElementsAre(19, 20), ElementsAre(21, 22),
                          ElementsAre(30, 31), ElementsAre(0.3, 0.4),  // es
                          // Asked for but not in the reply: empty, which the
                          // caller refuses.
                          ElementsAre(12, 13), ElementsAre(), ElementsAre(),  // var_0.95
                          ElementsAre(), ElementsAre()));                     // stddev

  // min and max have no error.
  StatisticItem min_se = (*items)[1];
  min_se.part = StatisticItem::Part::kStandardError;
  EXPECT_EQ(ValuesOf(s, min_se), nullptr);
}

}  // namespace
}  // namespace pricer
