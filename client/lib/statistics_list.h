// The statistics a user lists with `pricer price --stats`, e.g.
// "mean,stddev,var:0.99,es:0.975", and how each maps to the API.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

// A level's name: its shortest decimal that reads back as the same double,
// in fixed notation (0.99 -> "0.99", 1e-5 -> "0.00001", 1 -> "1"). The
// Python client names levels by the same rule.
std::string LevelName(double level);

struct StatisticItem {
  enum class Kind { kMean, kStddev, kMin, kMax, kQuantile, kVar, kEs };
  // The statistic itself, or one of its Monte Carlo errors
  // (StatisticsSelection.errors): the bounds of its confidence interval
  // (quantile, VaR) or its standard error (mean, stddev, ES).
  enum class Part { kValue, kLower, kUpper, kStandardError };
  Kind kind = Kind::kMean;
  double level = 0;  // quantile, VaR and ES levels
  // The CSV column: mean, stddev, min, max, quantile_L, var_L, es_L, with L
  // LevelName(level): var:.99 and var:0.990 are both var_0.99; an error
  // adds _lo, _hi or _se (var_0.99_lo, mean_se).
  std::string name;
  Part part = Part::kValue;
};

// The CSV column of a statistic's value: mean, stddev, min, max, or
// quantile_L, var_L, es_L with L LevelName(level).
std::string StatisticName(StatisticItem::Kind kind, double level);

// One item as written, e.g. "var:.99" or "mean" (spaces trimmed); an error
// names `flag` ("--stats") and the item.
absl::StatusOr<StatisticItem> ParseStatisticItem(absl::string_view text, absl::string_view flag);

// Parses a comma-separated list of mean, stddev, min, max, quantile:L
// (0 <= L <= 1), var:L and es:L (0 < L < 1). An item given twice (under any
// spelling of its level) is refused, naming both as written.
// `flag` names the list in an error.
absl::StatusOr<std::vector<StatisticItem>> ParseStatisticsList(absl::string_view list,
                                                               absl::string_view flag = "--stats");
// The levels of --contributions: es:L and var:L only, ES's first (the order
// the server sends them in), each once.
absl::StatusOr<std::vector<StatisticItem>> ParseContributionsList(absl::string_view list);

// `items`, each followed by its errors: mean -> mean, mean_se; var:0.99 ->
// var_0.99, var_0.99_lo, var_0.99_hi; es_L -> es_L, es_L_se; min and max
// have none. The columns of the CSV when errors are asked for.
std::vector<StatisticItem> WithErrors(const std::vector<StatisticItem>& items);

// The selection that asks the server for `items` (their values; errors are
// StatisticsSelection.errors).
v1::StatisticsSelection ToSelection(const std::vector<StatisticItem>& items);

// The values of `item` (or of its error, by `item.part`) in a reply's
// statistics, one per column of the chunk; null when the reply lacks the level.
const google::protobuf::RepeatedField<double>* ValuesOf(const v1::ColumnStatistics& statistics,
                                                        const StatisticItem& item);

}  // namespace pricer
