#include "server/service/attribution_validation.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/service/field_checks.h"

namespace pricer {

absl::Status ToContributions(const v1::StatisticsSelection& request, JobSpec* spec) {
  StatisticsSelection& selection = spec->output.statistics;
  const int levels = request.es_contributions_size() + request.var_contributions_size();
  for (auto [field, asked] : {std::pair{"output.statistics.delta", request.delta()},
                              std::pair{"output.statistics.vega", request.vega()}}) {
    if (asked && levels == 0) {
      return Invalid(field, "true",
                     "the sensitivities are those of contributed levels: give "
                     "output.statistics.es_contributions or var_contributions");
    }
  }
  if (levels == 0) return absl::OkStatus();
  selection.delta = request.delta();
  selection.vega = request.vega();
  if (levels > kMaxContributionLevels) {
    return Invalid("output.statistics.es_contributions size + var_contributions size", levels,
                   absl::StrCat("at most ", kMaxContributionLevels, " levels in all"));
  }
  if (selection.from_covariance) {
    return Invalid("output.statistics.moments_from_covariance", "true",
                   "the moments shortcut computes no tail: ask for the contributions without it");
  }
  for (auto [field, from, to, of, named] :
       {std::tuple{"output.statistics.es_contributions", &request.es_contributions(),
                   &selection.es_contributions, &selection.es, "es"},
        std::tuple{"output.statistics.var_contributions", &request.var_contributions(),
                   &selection.var_contributions, &selection.var, "var"}}) {
    for (int l = 0; l < from->size(); ++l) {
      const double level = (*from)[l];
      if (std::find(of->begin(), of->end(), level) == of->end()) {
        return Invalid(absl::StrCat(field, "[", l, "]"), level,
                       absl::StrCat("must be one of the levels of output.statistics.", named, " [",
                                    absl::StrJoin(*of, ", "), "]"));
      }
      if (std::find(to->begin(), to->end(), level) != to->end()) {
        return Invalid(absl::StrCat(field, "[", l, "]"), level, "is given twice");
      }
      to->push_back(level);
    }
  }
  return absl::OkStatus();
}

}  // namespace pricer
