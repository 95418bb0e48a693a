// A PriceRequest's book and historical scenarios (docs/risk.md, "Books"):
// `instruments` into JobSpec::instruments, `returns` into JobSpec::returns,
// each bad field named with its value in an INVALID_ARGUMENT.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "pricer/v1/pricer.pb.h"
#include "server/model/job_spec.h"
#include "server/service/job_preparation.h"
#include "server/store/scenario_store.h"

namespace pricer {

inline constexpr int64_t kMaxInstruments = 100'000;
inline constexpr double kMaxStrike = 1e8;
inline constexpr double kMaxExpiry = 100;
inline constexpr double kMaxInstrumentVolatility = 10;
// |R| bound: ST = S0 e^R stays under 1e8 * e^20 ~ 5e16, finite in float32
// with room for SC's sums.
inline constexpr double kMaxLogReturn = 20;

// INVALID_ARGUMENT naming the first entry of R (P x N, column-major) as
// field[row, column] that is not finite or over kMaxLogReturn in magnitude.
absl::Status CheckLogReturns(absl::string_view field, const std::vector<float>& values,
                             int64_t rows);

// The instruments of `request` on `market` (its issuers and maturity).
absl::StatusOr<std::vector<Instrument>> ToInstruments(const v1::PriceRequest& request,
                                                      const Market& market);

// OutputOptions.instrument_values needs a book: INVALID_ARGUMENT naming it
// when `spec` (its instruments and output set) has none.
absl::Status CheckBookOutput(const JobSpec& spec);

// The historical returns of `request`, if any, into `spec` (whose market is
// set): spec->returns with its shape (a stored set's values left to `prep`)
// and spec->paths = its rows; the fields refused with them named. Without
// returns, leaves `spec` as it is.
absl::Status ToReturns(const v1::PriceRequest& request, const ScenarioStore& store,
                       Preparation* prep, JobSpec* spec);

}  // namespace pricer
