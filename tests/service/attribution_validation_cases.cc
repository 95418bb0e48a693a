// The bad contributions of a PriceRequest's statistics, each refused naming
// its field and value (run by price_validation_test.cc).
#include <limits>
#include <vector>

#include "tests/service/bad_request_case.h"

namespace pricer::testing {

std::vector<BadRequestCase> AttributionCases() {
  auto stats = [](v1::PriceRequest& r) -> v1::StatisticsSelection& {
    v1::StatisticsSelection& s = *r.mutable_output()->mutable_statistics();
    s.add_es(0.975);
    s.add_var(0.99);
    return s;
  };
  return {
      {"EsContributionNotAnEsLevel", [&](auto& r) { stats(r).add_es_contributions(0.99); },
       "output.statistics.es_contributions[0] is 0.99: must be one of the levels of "
       "output.statistics.es [0.975]"},
      {"VarContributionNotAVarLevel",
       [&](auto& r) {
         v1::StatisticsSelection& s = stats(r);
         s.add_var_contributions(0.99);
         s.add_var_contributions(0.95);
       },
       "output.statistics.var_contributions[1] is 0.95: must be one of the levels of "
       "output.statistics.var [0.99]"},
      {"ContributionNaN",
       [&](auto& r) { stats(r).add_es_contributions(std::numeric_limits<double>::quiet_NaN()); },
       "output.statistics.es_contributions[0] is NaN"},
      {"ContributionTwice",
       [&](auto& r) {
         v1::StatisticsSelection& s = stats(r);
         s.add_es_contributions(0.975);
         s.add_es_contributions(0.975);
       },
       "output.statistics.es_contributions[1] is 0.975: is given twice"},
      {"ContributionsWithoutStatistics",
       [](auto& r) { r.mutable_output()->mutable_statistics()->add_var_contributions(0.99); },
       "output.statistics.var_contributions[0] is 0.99: must be one of the levels of "
       "output.statistics.var []"},
      {"TooManyContributions",
       [&](auto& r) {
         v1::StatisticsSelection& s = stats(r);
         for (int l = 0; l < 17; ++l) s.add_es_contributions(0.975);
       },
       "output.statistics.es_contributions size + var_contributions size is 17: at most 16"},
      {"DeltaWithoutContributions", [&](auto& r) { stats(r).set_delta(true); },
       "output.statistics.delta is true: the sensitivities are those of contributed levels"},
      {"VegaWithoutContributions", [&](auto& r) { stats(r).set_vega(true); },
       "output.statistics.vega is true: the sensitivities are those of contributed levels"},
      {"ContributionsWithTheMomentsShortcut",
       [](auto& r) {
         v1::StatisticsSelection& s = *r.mutable_output()->mutable_statistics();
         s.set_mean(true);
         s.set_moments_from_covariance(true);
         s.add_es_contributions(0.975);
       },
       "output.statistics.moments_from_covariance is true: the moments shortcut computes no "
       "tail"},
  };
}

}  // namespace pricer::testing
