// Checks a PriceRequest field by field and turns it into the engine's JobSpec.
#pragma once

#include "absl/status/statusor.h"
#include "pricer/v1/pricer.pb.h"
#include "server/engine/job_spec.h"

namespace pricer {

// Documented limits of one request (see pricer.proto).
inline constexpr int64_t kMaxIssuers = 100'000;
inline constexpr int64_t kMaxPaths = 1'000'000;
inline constexpr int64_t kMaxPathIssuerProduct = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxScenarioColumns = 1'000'000'000;
inline constexpr int64_t kMaxChunkColumns = 1'000'000;

// INVALID_ARGUMENT naming the first bad field and its value, else the spec.
absl::StatusOr<JobSpec> ToJobSpec(const v1::PriceRequest& request);

}  // namespace pricer
