#include "server/service/job_preparation.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/model/correlation.h"
#include "server/service/book_validation.h"

namespace pricer {

absl::Status Preparation::Run(ScenarioStore& store, JobSpec& job) const {
  Market& market = job.market;
  if (draw.has_value()) {
    const std::vector<double> spot = DrawSpots(*draw), volatility = DrawVolatilities(*draw);
    std::copy(spot.begin(), spot.end(), market.spot.begin());
    std::copy(volatility.begin(), volatility.end(), market.volatility.begin());
  }
  if (!correlation.empty()) {
    ASSIGN_OR_RETURN(
        const std::vector<float> factor,
        CholeskyFactor(correlation, market.issuers(), [&job] { return StopStatus(job); }));
    std::copy(factor.begin(), factor.end(), market.correlation_factor.begin());
  }
  if (!scenario_set.empty()) {
    RETURN_IF_ERROR(ReadStoredSet(store, scenario_set, "scenarios.scenario_set", job.scenarios));
  }
  if (!returns_set.empty()) {
    RETURN_IF_ERROR(ReadStoredSet(store, returns_set, "returns.scenario_set", *job.returns));
    RETURN_IF_ERROR(CheckLogReturns("returns.scenario_set", *job.returns->shared_values(),
                                    job.returns->rows()));
  }
  return absl::OkStatus();
}

absl::Status Preparation::ReadStoredSet(ScenarioStore& store, const std::string& id,
                                        absl::string_view field, ScenarioMatrix& matrix) {
  absl::StatusOr<ScenarioMatrix> set = store.Get(id);
  if (absl::IsNotFound(set.status())) {
    return absl::NotFoundError(absl::StrCat(field, " '", id,
                                            "' is no longer stored on this server: upload it "
                                            "again with UploadScenarios"));
  }
  RETURN_IF_ERROR(set.status());
  if (set->rows() != matrix.rows() || set->columns() != matrix.columns()) {
    return absl::DataLossError(absl::StrCat("scenario set ", id, " changed shape"));
  }
  matrix.SetValues(set->shared_values());
  return absl::OkStatus();
}

}  // namespace pricer
