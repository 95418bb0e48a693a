// What request validation leaves for the job's first engine task
// (JobSpec::prepare): the steps too heavy for a gRPC thread. Validation
// records them with the sizes they will fill; the engine runs them on a
// device worker before any other task of the job.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/model/job_spec.h"
#include "server/store/scenario_store.h"

namespace pricer {

struct Preparation {
  std::optional<MarketDraw> draw;   // a generated market to draw
  std::vector<double> correlation;  // N x N (checked), to factor
  std::string scenario_set;         // a stored set to read: A
  std::string returns_set;          // a stored set to read: historical returns R

  bool empty() const {
    return !draw.has_value() && correlation.empty() && scenario_set.empty() && returns_set.empty();
  }
  // Fills in `job`'s drawn spots and volatilities, its correlation factor
  // and its stored scenario and returns values, in place.
  absl::Status Run(ScenarioStore& store, JobSpec& job) const;

 private:
  // Set `id` into `matrix` (the request's `field`).
  static absl::Status ReadStoredSet(ScenarioStore& store, const std::string& id,
                                    absl::string_view field, ScenarioMatrix& matrix);
};

}  // namespace pricer
