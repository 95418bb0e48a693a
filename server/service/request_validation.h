// Checks a PriceRequest field by field and turns it into the engine's JobSpec.
#pragma once

#include "absl/status/statusor.h"
#include "pricer/v1/pricer.pb.h"
#include "server/model/job_spec.h"
#include "server/store/scenario_store.h"

namespace pricer {

// Documented limits of one request (see pricer.proto).
inline constexpr int64_t kMaxIssuers = 100'000;
inline constexpr int64_t kMaxPaths = 1'000'000;
inline constexpr int64_t kMaxPathIssuerProduct = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxScenarioColumns = 1'000'000'000;
inline constexpr int64_t kMaxChunkColumns = 1'000'000;
inline constexpr int64_t kMaxCorrelatedIssuers = 4096;
inline constexpr int kMaxStatisticLevels = 16;
// Bounds that keep ST and SC finite in float32: the largest shock |z| is
// about 5.8, so ST <= 1e8 * e^(10 + 5 * 5.8) ~ 9e24 and |SC| <= N * 1e8 * ST
// stays below float32's 3.4e38.
inline constexpr double kMaxSpot = 1e8;
inline constexpr double kMaxPosition = 1e8;
inline constexpr double kMaxRateTimesMaturity = 10;
inline constexpr double kMaxVolatilityTimesRootMaturity = 5;

// INVALID_ARGUMENT naming the first entry of a column-major matrix of `rows`
// rows (field[row, column]) that is not finite or over 1e8 in magnitude.
absl::Status CheckPositions(absl::string_view field, const std::vector<float>& values,
                            int64_t rows);

// The shape of stored set `id` (the request's `field`), NOT_FOUND naming
// both when the store does not hold it.
absl::StatusOr<ScenarioStore::Shape> StoredSetShape(const ScenarioStore& store,
                                                    const std::string& id, absl::string_view field);

// INVALID_ARGUMENT naming the first bad field and its value, else the spec.
// `store` resolves `scenarios.scenario_set` (NOT_FOUND for an unknown id).
absl::StatusOr<JobSpec> ToJobSpec(const v1::PriceRequest& request, ScenarioStore& store);

}  // namespace pricer
