#include "client/lib/error_target.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace pricer {
namespace {

using Kind = StatisticItem::Kind;
using Statistic = v1::PrecisionTarget::Statistic;

// The statistics a target may bound (min and max have no error).
constexpr std::pair<Kind, Statistic> kStatistics[] = {
    {Kind::kMean, v1::PrecisionTarget::STATISTIC_MEAN},
    {Kind::kStddev, v1::PrecisionTarget::STATISTIC_STDDEV},
    {Kind::kQuantile, v1::PrecisionTarget::STATISTIC_QUANTILE},
    {Kind::kVar, v1::PrecisionTarget::STATISTIC_VAR},
    {Kind::kEs, v1::PrecisionTarget::STATISTIC_ES}};

absl::Status BadTarget(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--error-target '", text, "': ", why));
}

}  // namespace

absl::StatusOr<ErrorTarget> ParseErrorTarget(absl::string_view text) {
  const size_t equals = text.find('=');
  if (equals == absl::string_view::npos) {
    return BadTarget(text, "give STAT[:LEVEL]=X, e.g. var:0.99=2% or mean=0.5");
  }
  ErrorTarget target;
  absl::StatusOr<StatisticItem> item =
      ParseStatisticItem(absl::StripAsciiWhitespace(text.substr(0, equals)), "--error-target");
  if (!item.ok()) return item.status();
  if (item->kind == Kind::kMin || item->kind == Kind::kMax) {
    return BadTarget(text, absl::StrCat(item->name,
                                        " has no Monte Carlo error; the statistic is one of mean, "
                                        "stddev, quantile:L, var:L, es:L"));
  }
  target.item = *std::move(item);
  absl::string_view bound = absl::StripAsciiWhitespace(text.substr(equals + 1));
  const bool relative = absl::ConsumeSuffix(&bound, "%");
  double value = 0;
  // Written so that NaN fails too.
  if (!absl::SimpleAtod(bound, &value) || !(value > 0 && std::isfinite(value))) {
    return BadTarget(text, "the bound must be a positive number (X% for a relative one)");
  }
  (relative ? target.relative : target.absolute) = relative ? value / 100 : value;
  return target;
}

v1::PrecisionTarget ToPrecisionTarget(const ErrorTarget& target, int64_t max_paths) {
  v1::PrecisionTarget proto;
  for (const auto& [kind, statistic] : kStatistics) {
    if (kind == target.item.kind) proto.set_statistic(statistic);
  }
  proto.set_level(target.item.level);
  proto.set_relative(target.relative);
  proto.set_absolute(target.absolute);
  proto.set_max_paths(max_paths);
  return proto;
}

std::string DescribeTarget(const v1::PrecisionTarget& target) {
  std::string name = "?";
  for (const auto& [kind, statistic] : kStatistics) {
    if (statistic == target.statistic()) name = StatisticName(kind, target.level());
  }
  std::vector<std::string> bounds;
  // %g: 0.07 is "7%", not the 7.000000000000001 of 0.07 * 100.
  if (target.relative() > 0) bounds.push_back(absl::StrFormat("%g%%", target.relative() * 100));
  if (target.absolute() > 0) bounds.push_back(absl::StrFormat("%g", target.absolute()));
  return absl::StrCat(name, " <= ", absl::StrJoin(bounds, " and <= "));
}

bool IsTargetPathCount(int64_t rows, int64_t paths, const v1::PrecisionTarget& target) {
  if (paths <= 0 || rows < paths || rows > target.max_paths() || rows % paths != 0) return false;
  const int64_t multiple = rows / paths;
  return (multiple & (multiple - 1)) == 0;
}

}  // namespace pricer
