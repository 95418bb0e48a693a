#include "server/service/book_validation.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/service/field_checks.h"
#include "server/service/request_validation.h"

namespace pricer {
namespace {

absl::StatusOr<InstrumentType> ToType(int type, absl::string_view field) {
  switch (type) {
    case v1::Instrument::TYPE_STOCK:
      return InstrumentType::kStock;
    case v1::Instrument::TYPE_FORWARD:
      return InstrumentType::kForward;
    case v1::Instrument::TYPE_CALL:
      return InstrumentType::kCall;
    case v1::Instrument::TYPE_PUT:
      return InstrumentType::kPut;
    default:
      return Invalid(field, type,
                     "must be TYPE_STOCK (0), TYPE_FORWARD (1), TYPE_CALL (2) or TYPE_PUT (3)");
  }
}

absl::StatusOr<Instrument> ToInstrument(const v1::Instrument& from, int index,
                                        const Market& market) {
  const std::string field = absl::StrCat("instruments[", index, "]");
  Instrument instrument;
  RETURN_IF_ERROR(
      CheckRange(absl::StrCat(field, ".issuer"), from.issuer(), 0, market.issuers() - 1));
  instrument.issuer = from.issuer();
  ASSIGN_OR_RETURN(instrument.type, ToType(from.type(), absl::StrCat(field, ".type")));
  if (from.has_volatility()) {
    const double sigma = from.volatility();
    if (!(sigma >= 0 && sigma <= kMaxInstrumentVolatility)) {  // also NaN
      return Invalid(absl::StrCat(field, ".volatility"), sigma,
                     absl::StrCat("must be in [0, ", kMaxInstrumentVolatility, "]"));
    }
    instrument.volatility = sigma;
  }
  if (instrument.type == InstrumentType::kStock) return instrument;
  if (!(from.strike() > 0 && from.strike() <= kMaxStrike)) {
    return Invalid(absl::StrCat(field, ".strike"), from.strike(),
                   absl::StrCat("must be in (0, ", kMaxStrike, "] for a ",
                                InstrumentTypeName(instrument.type)));
  }
  if (!(from.expiry() >= market.maturity && from.expiry() <= kMaxExpiry)) {
    return Invalid(absl::StrCat(field, ".expiry"), from.expiry(),
                   absl::StrCat("must be in [maturity ", market.maturity, ", ", kMaxExpiry,
                                "] years for a ", InstrumentTypeName(instrument.type),
                                " (the book is valued at the horizon, `maturity`)"));
  }
  instrument.strike = from.strike();
  instrument.expiry = from.expiry();
  return instrument;
}

// The returns' refused companions: the first one the request sets.
absl::Status CheckHistoricalOptions(const v1::PriceRequest& request) {
  constexpr const char* kWhy = "historical returns give the paths; it applies to GBM paths only";
  if (request.antithetic()) return Invalid("antithetic", "true", kWhy);
  if (request.market().correlation_size() > 0) {
    return Invalid("market.correlation size", request.market().correlation_size(), kWhy);
  }
  if (request.has_target()) {
    return Invalid("target", "set",
                   "historical returns are a fixed set of scenarios; a precision target adds "
                   "Monte Carlo paths");
  }
  return absl::OkStatus();
}

absl::StatusOr<ScenarioMatrix> ToInlineReturns(const v1::Matrix& m, int64_t issuers) {
  RETURN_IF_ERROR(CheckRange("returns.matrix.rows", m.rows(), 1, kMaxPaths));
  if (m.columns() != issuers) {
    return Invalid("returns.matrix.columns", m.columns(),
                   absl::StrCat("must equal the issuer count ", issuers));
  }
  const int64_t expected = m.rows() * m.columns() * static_cast<int64_t>(sizeof(float));
  if (static_cast<int64_t>(m.values().size()) != expected) {
    return Invalid("returns.matrix.values size", m.values().size(),
                   absl::StrCat("must be 4 * rows * columns = ", expected, " bytes"));
  }
  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(m.rows() * m.columns()));
  std::memcpy(values->data(), m.values().data(), m.values().size());
  RETURN_IF_ERROR(CheckLogReturns("returns.matrix.values", *values, m.rows()));
  return ScenarioMatrix::Inline(m.rows(), m.columns(), std::move(values));
}

absl::StatusOr<ScenarioMatrix> ToStoredReturns(const std::string& id, int64_t issuers,
                                               const ScenarioStore& store, Preparation* prep) {
  ASSIGN_OR_RETURN(const ScenarioStore::Shape set,
                   StoredSetShape(store, id, "returns.scenario_set"));
  if (set.columns != issuers) {
    return Invalid("returns.scenario_set columns", set.columns,
                   absl::StrCat("must equal the issuer count ", issuers, " (set ", id, " is ",
                                set.rows, " x ", set.columns, ")"));
  }
  RETURN_IF_ERROR(CheckRange("returns.scenario_set rows", set.rows, 1, kMaxPaths));
  prep->returns_set = id;
  return ScenarioMatrix::Deferred(set.rows, set.columns);
}

}  // namespace

absl::Status CheckLogReturns(absl::string_view field, const std::vector<float>& values,
                             int64_t rows) {
  for (size_t k = 0; k < values.size(); ++k) {
    if (!(std::abs(values[k]) <= kMaxLogReturn)) {  // also NaN
      return Invalid(absl::StrCat(field, "[", static_cast<int64_t>(k) % rows, ", ",
                                  static_cast<int64_t>(k) / rows, "]"),
                     values[k], absl::StrCat("must be finite with |value| <= ", kMaxLogReturn));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Instrument>> ToInstruments(const v1::PriceRequest& request,
                                                      const Market& market) {
  std::vector<Instrument> instruments;
  if (request.instruments_size() > kMaxInstruments) {
    return Invalid("instruments size", request.instruments_size(),
                   absl::StrCat("at most ", kMaxInstruments, " instruments"));
  }
  instruments.reserve(static_cast<size_t>(request.instruments_size()));
  for (int k = 0; k < request.instruments_size(); ++k) {
    ASSIGN_OR_RETURN(Instrument instrument, ToInstrument(request.instruments(k), k, market));
    instruments.push_back(instrument);
  }
  return instruments;
}

absl::Status CheckBookOutput(const JobSpec& spec) {
  if (spec.output.instrument_values && spec.instruments.empty()) {
    return Invalid("output.instrument_values", "true",
                   "needs instruments (without a book the paths' values are ST: "
                   "output.terminal_prices)");
  }
  return absl::OkStatus();
}

absl::Status ToReturns(const v1::PriceRequest& request, const ScenarioStore& store,
                       Preparation* prep, JobSpec* spec) {
  if (!request.has_returns()) return absl::OkStatus();
  RETURN_IF_ERROR(CheckHistoricalOptions(request));
  const v1::HistoricalReturns& returns = request.returns();
  const int64_t issuers = spec->market.issuers();
  switch (returns.source_case()) {
    case v1::HistoricalReturns::kMatrix: {
      ASSIGN_OR_RETURN(spec->returns, ToInlineReturns(returns.matrix(), issuers));
      break;
    }
    case v1::HistoricalReturns::kScenarioSet: {
      ASSIGN_OR_RETURN(spec->returns,
                       ToStoredReturns(returns.scenario_set(), issuers, store, prep));
      break;
    }
    case v1::HistoricalReturns::SOURCE_NOT_SET:
      return absl::InvalidArgumentError(
          "returns is set but empty: give returns.matrix or returns.scenario_set");
  }
  const int64_t rows = spec->returns->rows();
  if (request.paths() != 0 && request.paths() != rows) {
    return Invalid("paths", request.paths(),
                   absl::StrCat("must be 0 or the historical returns' rows (", rows, ")"));
  }
  spec->paths = rows;
  return absl::OkStatus();
}

}  // namespace pricer
