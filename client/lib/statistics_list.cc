#include "client/lib/statistics_list.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace pricer {

absl::StatusOr<std::vector<StatisticItem>> ParseStatisticsList(absl::string_view list) {
  using Kind = StatisticItem::Kind;
  static constexpr std::pair<absl::string_view, Kind> kPlain[] = {
      {"mean", Kind::kMean}, {"stddev", Kind::kStddev}, {"min", Kind::kMin}, {"max", Kind::kMax}};
  static constexpr std::pair<absl::string_view, Kind> kLevelled[] = {
      {"quantile", Kind::kQuantile}, {"var", Kind::kVar}, {"es", Kind::kEs}};
  std::vector<StatisticItem> items;
  for (absl::string_view raw : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    const absl::string_view text = absl::StripAsciiWhitespace(raw);
    StatisticItem item;
    bool known = false;
    for (const auto& [name, kind] : kPlain) {
      if (text == name) {
        item = StatisticItem{kind, 0, std::string(name)};
        known = true;
      }
    }
    const std::vector<absl::string_view> parts = absl::StrSplit(text, absl::MaxSplits(':', 1));
    for (const auto& [name, kind] : kLevelled) {
      if (parts.size() == 2 && parts[0] == name) {
        double level = 0;
        if (!absl::SimpleAtod(parts[1], &level)) {
          return absl::InvalidArgumentError(
              absl::StrCat("--stats: '", text, "': the level '", parts[1], "' is not a number"));
        }
        item = StatisticItem{kind, level, absl::StrCat(name, "_", parts[1])};
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--stats: '", text, "' is not one of mean, stddev, min, max, quantile:L, var:L, es:L"));
    }
    const bool seen = std::any_of(items.begin(), items.end(), [&](const StatisticItem& other) {
      return other.kind == item.kind && other.level == item.level;
    });
    if (!seen) items.push_back(std::move(item));
  }
  if (items.empty()) return absl::InvalidArgumentError("--stats: the list is empty");
  return items;
}

v1::StatisticsSelection ToSelection(const std::vector<StatisticItem>& items) {
  using Kind = StatisticItem::Kind;
  v1::StatisticsSelection selection;
  for (const StatisticItem& item : items) {
    switch (item.kind) {
      case Kind::kMean:
        selection.set_mean(true);
        break;
      case Kind::kStddev:
        selection.set_stddev(true);
        break;
      case Kind::kMin:
        selection.set_min(true);
        break;
      case Kind::kMax:
        selection.set_max(true);
        break;
      case Kind::kQuantile:
        selection.add_quantiles(item.level);
        break;
      case Kind::kVar:
        selection.add_var(item.level);
        break;
      case Kind::kEs:
        selection.add_es(item.level);
        break;
    }
  }
  return selection;
}

const google::protobuf::RepeatedField<double>* ValuesOf(const v1::ColumnStatistics& statistics,
                                                        const StatisticItem& item) {
  using Kind = StatisticItem::Kind;
  auto level = [&](const google::protobuf::RepeatedPtrField<v1::LevelValues>& levels)
      -> const google::protobuf::RepeatedField<double>* {
    for (const v1::LevelValues& l : levels) {
      if (l.level() == item.level) return &l.values();
    }
    return nullptr;
  };
  switch (item.kind) {
    case Kind::kMean:
      return &statistics.mean();
    case Kind::kStddev:
      return &statistics.stddev();
    case Kind::kMin:
      return &statistics.min();
    case Kind::kMax:
      return &statistics.max();
    case Kind::kQuantile:
      return level(statistics.quantiles());
    case Kind::kVar:
      return level(statistics.var());
    case Kind::kEs:
      return level(statistics.es());
  }
  return nullptr;
}

}  // namespace pricer
