// The bad instruments and historical returns of a PriceRequest, each refused
// naming its field and value (run by price_validation_test.cc).
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tests/service/bad_request_case.h"
#include "tests/service/service_test_util.h"

namespace pricer::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A call on issuer 1, strike 6, expiry 2 years (the base maturity is 1).
v1::Instrument* AddCall(v1::PriceRequest& r) {
  v1::Instrument* call = r.add_instruments();
  call->set_issuer(1);
  call->set_type(v1::Instrument::TYPE_CALL);
  call->set_strike(6);
  call->set_expiry(2);
  return call;
}

// Inline returns of `rows` x `columns`, all 0.01 but `bad` at (1, 2) when
// there is such an entry.
void UseReturns(v1::PriceRequest& r, int64_t rows, int64_t columns, float bad = 0.01f) {
  std::vector<float> values(static_cast<size_t>(rows * columns), 0.01f);
  if (rows > 1 && columns > 2) values[static_cast<size_t>(2 * rows + 1)] = bad;
  v1::Matrix* m = r.mutable_returns()->mutable_matrix();
  m->set_rows(rows);
  m->set_columns(columns);
  m->set_values(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

// The instruments'.
std::vector<BadRequestCase> InstrumentCases() {
  return {
      {"InstrumentIssuerOutOfRange", [](auto& r) { AddCall(r)->set_issuer(4); },
       "instruments[0].issuer is 4: must be in [0, 3]"},
      {"InstrumentIssuerNegative", [](auto& r) { AddCall(r)->set_issuer(-1); },
       "instruments[0].issuer is -1"},
      {"InstrumentUnknownType",
       [](auto& r) { AddCall(r)->set_type(static_cast<v1::Instrument::Type>(9)); },
       "instruments[0].type is 9: must be TYPE_STOCK (0)"},
      {"InstrumentStrikeZero",
       [](auto& r) {
         AddCall(r);
         AddCall(r)->set_strike(0);
       },
       "instruments[1].strike is 0: must be in (0, 1e+08] for a call"},
      {"InstrumentStrikeNaN", [](auto& r) { AddCall(r)->set_strike(kNaN); },
       "instruments[0].strike is NaN"},
      {"InstrumentExpiryBeforeHorizon", [](auto& r) { AddCall(r)->set_expiry(0.5); },
       "instruments[0].expiry is 0.5: must be in [maturity 1, 100] years for a call"},
      {"ForwardExpiryNaN",
       [](auto& r) {
         v1::Instrument* forward = AddCall(r);
         forward->set_type(v1::Instrument::TYPE_FORWARD);
         forward->set_expiry(kNaN);
       },
       "instruments[0].expiry is NaN: must be in [maturity 1, 100] years for a forward"},
      {"InstrumentVolatilityNegative", [](auto& r) { AddCall(r)->set_volatility(-0.1); },
       "instruments[0].volatility is -0.1: must be in [0, 10]"},
      {"InstrumentVolatilityNaN", [](auto& r) { AddCall(r)->set_volatility(kNaN); },
       "instruments[0].volatility is NaN"},
      {"ScenarioRowsAreNotTheInstruments",
       [](auto& r) {
         AddCall(r);
         AddCall(r);
         SetInlineMatrix(TestMatrix(4, 3), 4, 3, &r);  // 4 issuers, 2 instruments
       },
       "scenarios.matrix.rows is 4: must equal the instrument count 2"},
      {"InstrumentValuesWithoutABook",
       [](auto& r) { r.mutable_output()->set_instrument_values(true); },
       "output.instrument_values is true: needs instruments"},
  };
}

// The historical returns'.
std::vector<BadRequestCase> ReturnsCases() {
  return {
      {"ReturnsColumnsAreNotTheIssuers", [](auto& r) { UseReturns(r, 10, 3); },
       "returns.matrix.columns is 3: must equal the issuer count 4"},
      {"ReturnsNaN", [](auto& r) { UseReturns(r, 10, 4, std::numeric_limits<float>::quiet_NaN()); },
       "returns.matrix.values[1, 2] is NaN: must be finite with |value| <= 20"},
      {"ReturnsTooLarge", [](auto& r) { UseReturns(r, 10, 4, 25.0f); },
       "returns.matrix.values[1, 2] is 25"},
      {"ReturnsValuesTruncated",
       [](auto& r) {
         UseReturns(r, 10, 4);
         r.mutable_returns()->mutable_matrix()->mutable_values()->resize(100);
       },
       "returns.matrix.values size is 100: must be 4 * rows * columns = 160 bytes"},
      {"ReturnsPathsDiffer", [](auto& r) { UseReturns(r, 10, 4); },  // paths 1000
       "paths is 1000: must be 0 or the historical returns' rows (10)"},
      {"ReturnsWithAntithetic",
       [](auto& r) {
         UseReturns(r, 10, 4);
         r.set_antithetic(true);
       },
       "antithetic is true: historical returns give the paths"},
      {"ReturnsWithCorrelation",
       [](auto& r) {
         UseReturns(r, 10, 4);
         for (int k = 0; k < 16; ++k) r.mutable_market()->add_correlation(k % 5 == 0 ? 1 : 0);
       },
       "market.correlation size is 16: historical returns give the paths"},
      {"ReturnsWithTarget",
       [](auto& r) {
         UseReturns(r, 10, 4);
         r.set_paths(0);
         r.mutable_target()->set_relative(0.01);
       },
       "target is set: historical returns are a fixed set of scenarios"},
      {"ReturnsEmpty", [](auto& r) { r.mutable_returns(); },
       "returns is set but empty: give returns.matrix or returns.scenario_set"},
  };
}

}  // namespace

std::vector<BadRequestCase> BookCases() {
  std::vector<BadRequestCase> cases = InstrumentCases();
  for (BadRequestCase& c : ReturnsCases()) cases.push_back(std::move(c));
  return cases;
}

}  // namespace pricer::testing
