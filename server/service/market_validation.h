// The market of a PriceRequest: explicit or generated issuers, the model
// constants, the correlation. A generated market's draw and a correlation's
// Cholesky factor are left to the job's preparation (job_preparation.h).
#pragma once

#include "absl/status/statusor.h"
#include "pricer/v1/pricer.pb.h"
#include "server/model/job_spec.h"
#include "server/service/job_preparation.h"

namespace pricer {

// INVALID_ARGUMENT naming the first bad field and its value, else the market
// with its final sizes.
absl::StatusOr<Market> ToMarket(const v1::PriceRequest& request, Preparation* prep);

}  // namespace pricer
