#include "client/lib/statistics_list.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace pricer {

std::string LevelName(double level) {
  char text[400];  // the longest fixed double, 1e308, has 309 digits
  return std::string(text,
                     std::to_chars(text, text + sizeof(text), level, std::chars_format::fixed).ptr);
}

using Kind = StatisticItem::Kind;
using Part = StatisticItem::Part;

namespace {

// Each statistic's name in --stats; the levelled ones are written NAME:L.
struct KindName {
  absl::string_view name;
  Kind kind;
  bool levelled;
};
constexpr KindName kKinds[] = {
    {"mean", Kind::kMean, false}, {"stddev", Kind::kStddev, false},    {"min", Kind::kMin, false},
    {"max", Kind::kMax, false},   {"quantile", Kind::kQuantile, true}, {"var", Kind::kVar, true},
    {"es", Kind::kEs, true}};

}  // namespace

std::string StatisticName(Kind kind, double level) {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) {
      return k.levelled ? absl::StrCat(k.name, "_", LevelName(level)) : std::string(k.name);
    }
  }
  return "?";
}

absl::StatusOr<StatisticItem> ParseStatisticItem(absl::string_view text, absl::string_view flag) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, absl::MaxSplits(':', 1));
  for (const KindName& k : kKinds) {
    if (!k.levelled) {
      if (text == k.name) return StatisticItem{k.kind, 0, StatisticName(k.kind, 0)};
      continue;
    }
    if (parts.size() != 2 || parts[0] != k.name) continue;
    double level = 0;
    if (!absl::SimpleAtod(parts[1], &level)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", text, "': the level '", parts[1], "' is not a number"));
    }
    // A quantile may be the minimum or the maximum; VaR and ES at 0 or 1
    // have no tail. (Written so that NaN fails both.)
    const bool quantile = k.kind == Kind::kQuantile;
    if (quantile ? !(level >= 0 && level <= 1) : !(level > 0 && level < 1)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": '", text, "': the level must be in ",
                                                     quantile ? "[0, 1]" : "(0, 1)"));
    }
    return StatisticItem{k.kind, level, StatisticName(k.kind, level)};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      flag, ": '", text, "' is not one of mean, stddev, min, max, quantile:L, var:L, es:L"));
}

absl::StatusOr<std::vector<StatisticItem>> ParseStatisticsList(absl::string_view list,
                                                               absl::string_view flag) {
  std::vector<StatisticItem> items;
  std::vector<absl::string_view> written;  // each item as the user wrote it
  for (absl::string_view raw : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    const absl::string_view text = absl::StripAsciiWhitespace(raw);
    absl::StatusOr<StatisticItem> item = ParseStatisticItem(text, flag);
    if (!item.ok()) return item.status();
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].name == item->name) {
        return absl::InvalidArgumentError(absl::StrCat(flag, ": '", written[i], "' and '", text,
                                                       "' are the same item (", item->name, ")"));
      }
    }
    items.push_back(*std::move(item));
    written.push_back(text);
  }
  if (items.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": the list is empty"));
  return items;
}

absl::StatusOr<std::vector<StatisticItem>> ParseContributionsList(absl::string_view list) {
  ASSIGN_OR_RETURN(std::vector<StatisticItem> items, ParseStatisticsList(list, "--contributions"));
  for (const StatisticItem& item : items) {
    if (item.kind != Kind::kEs && item.kind != Kind::kVar) {
      return absl::InvalidArgumentError(
          absl::StrCat("--contributions: '", item.name, "' is not es:L or var:L"));
    }
  }
  // The server's order: es_contributions', then var_contributions'.
  std::stable_sort(items.begin(), items.end(), [](const StatisticItem& a, const StatisticItem& b) {
    return a.kind == Kind::kEs && b.kind == Kind::kVar;
  });
  return items;
}

v1::StatisticsSelection ToSelection(const std::vector<StatisticItem>& items) {
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

std::vector<StatisticItem> WithErrors(const std::vector<StatisticItem>& items) {
  std::vector<StatisticItem> columns;
  for (const StatisticItem& item : items) {
    columns.push_back(item);
    auto add = [&](Part part, absl::string_view suffix) {
      columns.push_back(
          StatisticItem{item.kind, item.level, absl::StrCat(item.name, suffix), part});
    };
    switch (item.kind) {
      case Kind::kMean:
      case Kind::kStddev:
      case Kind::kEs:
        add(Part::kStandardError, "_se");
        break;
      case Kind::kQuantile:
      case Kind::kVar:
        add(Part::kLower, "_lo");
        add(Part::kUpper, "_hi");
        break;
      case Kind::kMin:
      case Kind::kMax:
        break;
    }
  }
  return columns;
}

namespace {

using Doubles = google::protobuf::RepeatedField<double>;

// A statistic without levels: its values, or its standard error (null: it
// has none, as min and max).
const Doubles* PlainPart(const Doubles& values, const Doubles* standard_error, Part part) {
  if (part == Part::kValue) return &values;
  return part == Part::kStandardError ? standard_error : nullptr;
}

const Doubles* LevelPart(const google::protobuf::RepeatedPtrField<v1::LevelValues>& levels,
                         const StatisticItem& item) {
  for (const v1::LevelValues& l : levels) {
    if (l.level() != item.level) continue;
    switch (item.part) {
      case Part::kValue:
        return &l.values();
      case Part::kLower:
        return &l.lower();
      case Part::kUpper:
        return &l.upper();
      case Part::kStandardError:
        return &l.standard_error();
    }
  }
  return nullptr;
}

}  // namespace

const Doubles* ValuesOf(const v1::ColumnStatistics& statistics, const StatisticItem& item) {
  switch (item.kind) {
    case Kind::kMean:
      return PlainPart(statistics.mean(), &statistics.mean_standard_error(), item.part);
    case Kind::kStddev:
      return PlainPart(statistics.stddev(), &statistics.stddev_standard_error(), item.part);
    case Kind::kMin:
      return PlainPart(statistics.min(), nullptr, item.part);
    case Kind::kMax:
      return PlainPart(statistics.max(), nullptr, item.part);
    case Kind::kQuantile:
      return LevelPart(statistics.quantiles(), item);
    case Kind::kVar:
      return LevelPart(statistics.var(), item);
    case Kind::kEs:
      return LevelPart(statistics.es(), item);
  }
  return nullptr;
}

}  // namespace pricer
