#include "server/service/job_preparation.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/model/correlation.h"

namespace pricer {

absl::Status Preparation::Run(ScenarioStore& store, JobSpec& job) const {
  Market& market = job.market;
  if (draw.has_value()) {
    const std::vector<double> spot = DrawSpots(*draw), volatility = DrawVolatilities(*draw);
    std::copy(spot.begin(), spot.end(), market.spot.begin());
    std::copy(volatility.begin(), volatility.end(), market.volatility.begin());
  }
  if (!correlation.empty()) {
    ASSIGN_OR_RETURN(const std::vector<float> factor,
                     CholeskyFactor(correlation, market.issuers(),
                                    [&job] { return StopStatus(job); }));
    std::copy(factor.begin(), factor.end(), market.correlation_factor.begin());
  }
  if (!scenario_set.empty()) RETURN_IF_ERROR(ReadStoredSet(store, job.scenarios));
  return absl::OkStatus();
}

absl::Status Preparation::ReadStoredSet(ScenarioStore& store, ScenarioMatrix& scenarios) const {
  absl::StatusOr<ScenarioMatrix> set = store.Get(scenario_set);
  if (absl::IsNotFound(set.status())) {
    return absl::NotFoundError(absl::StrCat("scenarios.scenario_set '", scenario_set,
                                            "' is no longer stored on this server: upload it "
                                            "again with UploadScenarios"));
  }
  RETURN_IF_ERROR(set.status());
  if (set->rows() != scenarios.rows() || set->columns() != scenarios.columns()) {
    return absl::DataLossError(absl::StrCat("scenario set ", scenario_set, " changed shape"));
  }
  scenarios.SetValues(set->shared_values());
  return absl::OkStatus();
}

}  // namespace pricer
