// Pricing to a target precision (PrecisionTarget, docs/risk.md): the target
// a user gives with `pricer price --error-target var:0.99=2% --max-paths N`,
// and how the client names it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/lib/statistics_list.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

// One statistic's error bound: relative to |statistic| ("2%" -> 0.02) or
// absolute, in the statistic's units ("0.5").
struct ErrorTarget {
  StatisticItem item;  // mean, stddev, quantile, var or es, named as in --stats
  double relative = 0;
  double absolute = 0;
};

// Parses STAT[:LEVEL]=X: STAT one of mean, stddev, quantile, var, es, its
// level written and named as in --stats; X > 0 a number, relative when it
// ends in %. E.g. "var:.99=2%" -> var_0.99, relative 0.02; "mean=0.5" ->
// mean, absolute 0.5.
absl::StatusOr<ErrorTarget> ParseErrorTarget(absl::string_view text);

// The request's target: `target` with at most `max_paths` paths per column.
v1::PrecisionTarget ToPrecisionTarget(const ErrorTarget& target, int64_t max_paths);

// Whether a request with `target` is priced to a target precision.
inline bool Targeted(const v1::PrecisionTarget& target) {
  return target.statistic() != v1::PrecisionTarget::STATISTIC_UNSPECIFIED;
}

// The target as the summary says it: "var_0.99 <= 2%", "mean <= 0.5",
// "es_0.975 <= 1% and <= 0.25".
std::string DescribeTarget(const v1::PrecisionTarget& target);

// Whether a column of a request of `paths` paths with `target` may have
// been priced with `rows` paths: paths * 2^k, at most target.max_paths.
bool IsTargetPathCount(int64_t rows, int64_t paths, const v1::PrecisionTarget& target);

}  // namespace pricer
