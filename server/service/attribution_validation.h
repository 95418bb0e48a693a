// A PriceRequest's contributions (server/model/attribution.h): the levels of
// StatisticsSelection.es_contributions and var_contributions into the job's
// selection, each bad field named with its value in an INVALID_ARGUMENT.
#pragma once

#include "absl/status/status.h"
#include "pricer/v1/pricer.pb.h"
#include "server/model/job_spec.h"

namespace pricer {

// The most contributed levels a request may ask for, ES's and VaR's together.
inline constexpr int kMaxContributionLevels = 16;

// Sets spec->output.statistics' contributions from `request` (whose output
// selection is set): each level one of the selection's `es` (resp. `var`)
// levels, each once, not with the moments shortcut; and their sensitivities
// (delta, vega), which need a contributed level.
absl::Status ToContributions(const v1::StatisticsSelection& request, JobSpec* spec);

}  // namespace pricer
