// Every bad field of a PriceRequest is refused with INVALID_ARGUMENT naming
// the field and its value, and the server keeps serving.
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/service/bad_request_case.h"
#include "tests/service/service_test_util.h"

namespace pricer::testing {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The base request has 4 explicit issuers and 100 generated scenario columns.
void UseGeneratedMarket(v1::PriceRequest& r) {
  v1::GeneratedMarket* g = r.mutable_market()->mutable_generated();
  g->set_issuers(4);
  g->set_seed(3);
  g->set_spot_min(5);
  g->set_spot_max(10);
  g->set_volatility_min(0);
  g->set_volatility_max(1);
}

void UseMatrix(v1::PriceRequest& r, int64_t rows, int64_t columns) {
  SetInlineMatrix(TestMatrix(rows, columns), rows, columns, &r);
}

// A correlation for the base request's 4 issuers: the identity with the
// given entries (i, j, value) set, each only where named.
struct Entry {
  int i, j;
  double value;
};
void UseCorrelation(v1::PriceRequest& r, std::initializer_list<Entry> entries) {
  std::vector<double> c(16, 0.0);
  for (int i = 0; i < 4; ++i) c[i * 4 + i] = 1.0;
  for (const Entry& e : entries) c[e.i * 4 + e.j] = e.value;
  r.mutable_market()->mutable_correlation()->Assign(c.begin(), c.end());
}

v1::StatisticsSelection& Statistics(v1::PriceRequest& r) {
  return *r.mutable_output()->mutable_statistics();
}

// Paths, maturity and rate.
std::vector<BadRequestCase> RequestCases() {
  return {
      {"PathsZero", [](auto& r) { r.set_paths(0); }, "paths is 0"},
      {"PathsNegative", [](auto& r) { r.set_paths(-5); }, "paths is -5"},
      {"PathsTooMany", [](auto& r) { r.set_paths(2'000'000); }, "paths is 2000000"},
      {"MaturityZero", [](auto& r) { r.set_maturity(0); }, "maturity is 0"},
      {"MaturityNegative", [](auto& r) { r.set_maturity(-1); }, "maturity is -1"},
      {"MaturityNaN", [](auto& r) { r.set_maturity(kNaN); }, "maturity is NaN"},
      {"MaturityInf", [](auto& r) { r.set_maturity(kInf); }, "maturity is inf"},
      {"RateNaN", [](auto& r) { r.set_rate(kNaN); }, "rate is NaN"},
  };
}

// The market, and an explicit one.
std::vector<BadRequestCase> ExplicitMarketCases() {
  return {
      {"MarketNotSet", [](auto& r) { r.clear_market(); }, "market is not set"},
      {"ExplicitSpotEmpty",
       [](auto& r) {
         r.mutable_market()->mutable_explicit_()->clear_spot();
         r.mutable_market()->mutable_explicit_()->clear_volatility();
       },
       "market.explicit.spot size is 0"},
      {"ExplicitVolatilitySizeMismatch",
       [](auto& r) { r.mutable_market()->mutable_explicit_()->add_volatility(0.2); },
       "market.explicit.volatility size is 5"},
      {"ExplicitSpotNegative",
       [](auto& r) { r.mutable_market()->mutable_explicit_()->set_spot(3, -1); },
       "market.explicit.spot[3] is -1"},
      {"ExplicitSpotNaN",
       [](auto& r) { r.mutable_market()->mutable_explicit_()->set_spot(3, kNaN); },
       "market.explicit.spot[3] is NaN"},
      {"ExplicitVolatilityNegative",
       [](auto& r) { r.mutable_market()->mutable_explicit_()->set_volatility(2, -0.1); },
       "market.explicit.volatility[2] is -0.1"},
      {"ExplicitVolatilityInf",
       [](auto& r) { r.mutable_market()->mutable_explicit_()->set_volatility(2, kInf); },
       "market.explicit.volatility[2] is inf"},
  };
}

// A generated market.
std::vector<BadRequestCase> GeneratedMarketCases() {
  return {
      {"GeneratedIssuersZero",
       [](auto& r) {
         UseGeneratedMarket(r);
         r.mutable_market()->mutable_generated()->set_issuers(0);
       },
       "market.generated.issuers is 0"},
      {"GeneratedIssuersNegative",
       [](auto& r) {
         UseGeneratedMarket(r);
         r.mutable_market()->mutable_generated()->set_issuers(-3);
       },
       "market.generated.issuers is -3"},
      {"GeneratedSpotMinZero",
       [](auto& r) {
         UseGeneratedMarket(r);
         r.mutable_market()->mutable_generated()->set_spot_min(0);
       },
       "market.generated.spot_min is 0"},
      {"GeneratedSpotMaxBelowMin",
       [](auto& r) {
         UseGeneratedMarket(r);
         r.mutable_market()->mutable_generated()->set_spot_min(6);
         r.mutable_market()->mutable_generated()->set_spot_max(5.5);
       },
       "market.generated.spot_max is 5.5"},
      {"GeneratedVolatilityMinNegative",
       [](auto& r) {
         UseGeneratedMarket(r);
         r.mutable_market()->mutable_generated()->set_volatility_min(-0.25);
       },
       "market.generated.volatility_min is -0.25"},
  };
}

// The scenarios: inline or generated.
std::vector<BadRequestCase> ScenarioCases() {
  return {
      {"ScenariosNotSet", [](auto& r) { r.clear_scenarios(); }, "scenarios is not set"},
      {"MatrixRowsNotIssuers", [](auto& r) { UseMatrix(r, 3, 10); }, "scenarios.matrix.rows is 3"},
      {"MatrixColumnsZero", [](auto& r) { UseMatrix(r, 4, 0); }, "scenarios.matrix.columns is 0"},
      {"MatrixValuesWrongSize",
       [](auto& r) {
         UseMatrix(r, 4, 10);
         r.mutable_scenarios()->mutable_matrix()->mutable_values()->resize(4 * 39);
       },
       "scenarios.matrix.values size is 156"},
      {"MatrixValueNaN",
       [](auto& r) {
         std::vector<float> a = TestMatrix(4, 10);
         a[2 * 4 + 1] = std::numeric_limits<float>::quiet_NaN();  // row 1, column 2
         SetInlineMatrix(a, 4, 10, &r);
       },
       "scenarios.matrix.values[1, 2] is NaN"},
      {"GeneratedColumnsZero",
       [](auto& r) { r.mutable_scenarios()->mutable_generated()->set_columns(0); },
       "scenarios.generated.columns is 0"},
      {"GeneratedColumnsNegative",
       [](auto& r) { r.mutable_scenarios()->mutable_generated()->set_columns(-1); },
       "scenarios.generated.columns is -1"},
      {"GeneratedValueMaxBelowMin",
       [](auto& r) {
         r.mutable_scenarios()->mutable_generated()->set_value_min(1);
         r.mutable_scenarios()->mutable_generated()->set_value_max(0.5);
       },
       "scenarios.generated.value_max is 0.5"},
  };
}

// The column range, the chunks and the statistics' levels.
std::vector<BadRequestCase> ColumnAndOutputCases() {
  return {
      {"ColumnBeginNegative",
       [](auto& r) {
         r.set_column_begin(-1);
         r.set_column_end(10);
       },
       "column_begin is -1"},
      {"ColumnBeginAtColumns", [](auto& r) { r.set_column_begin(100); }, "column_begin is 100"},
      {"ColumnEndPastColumns", [](auto& r) { r.set_column_end(101); }, "column_end is 101"},
      {"ColumnEndAtBegin",
       [](auto& r) {
         r.set_column_begin(10);
         r.set_column_end(10);
       },
       "column_end is 10"},
      {"ColumnEndBeforeBegin",
       [](auto& r) {
         r.set_column_begin(10);
         r.set_column_end(5);
       },
       "column_end is 5"},
      {"ChunkColumnsNegative", [](auto& r) { r.mutable_output()->set_chunk_columns(-1); },
       "output.chunk_columns is -1"},
      {"QuantileAboveOne",
       [](auto& r) {
         Statistics(r).add_quantiles(0.5);
         Statistics(r).add_quantiles(1.5);
       },
       "output.statistics.quantiles[1] is 1.5: must be in [0, 1]"},
      {"QuantileNegative",
       [](auto& r) {
         Statistics(r).add_quantiles(0.5);
         Statistics(r).add_quantiles(-0.1);
       },
       "output.statistics.quantiles[1] is -0.1: must be in [0, 1]"},
      {"VarLevelZero", [](auto& r) { Statistics(r).add_var(0); },
       "output.statistics.var[0] is 0: must be in (0, 1)"},
      {"VarLevelOne", [](auto& r) { Statistics(r).add_var(1); },
       "output.statistics.var[0] is 1: must be in (0, 1)"},
      {"EsLevelNaN", [](auto& r) { Statistics(r).add_es(kNaN); },
       "output.statistics.es[0] is NaN: must be in (0, 1)"},
      {"SeventeenLevels",
       [](auto& r) {
         for (int l = 0; l < 17; ++l) Statistics(r).add_var(0.5 + 0.01 * l);
       },
       "output.statistics.var size is 17: at most 16 levels"},
  };
}

// The moments shortcut's conditions: each case sets it, then spoils.
std::vector<BadRequestCase> MomentsShortcutCases() {
  auto shortcut = [](void (*spoil)(v1::PriceRequest&)) {
    return [spoil](auto& r) { Statistics(r).set_moments_from_covariance(true), spoil(r); };
  };
  const std::string only = ": must be empty with moments_from_covariance";
  return {
      {"ShortcutWithMin", shortcut([](auto& r) { Statistics(r).set_min(true); }),
       "output.statistics.min is true" + only},
      {"ShortcutWithEs", shortcut([](auto& r) { Statistics(r).add_es(0.975); }),
       "output.statistics.es is 0.975" + only},
      {"ShortcutWithErrors", shortcut([](auto& r) { Statistics(r).set_errors(true); }),
       "output.statistics.errors is true: must be false with moments_from_covariance"},
      {"ShortcutWithFullOutput", shortcut([](auto& r) { r.mutable_output()->set_full(true); }),
       "output.full is true: must be false with moments_from_covariance"},
      {"ShortcutWithTarget", shortcut([](auto& r) {
         r.mutable_target()->set_statistic(v1::PrecisionTarget::STATISTIC_MEAN);
         r.mutable_target()->set_relative(0.01);
         r.mutable_target()->set_max_paths(100000);
       }),
       "target.max_paths is 100000: a target needs errors"},
      {"ShortcutOverItsIssuers", shortcut([](auto& r) {
         UseGeneratedMarket(r);
         r.mutable_market()->mutable_generated()->set_issuers(8193);
       }),
       "market.generated.issuers is 8193: must be <= 8192 with moments_from_covariance"},
  };
}

// The correlation matrix.
std::vector<BadRequestCase> CorrelationCases() {
  return {
      {"CorrelationWrongSize",
       [](auto& r) {
         UseCorrelation(r, {});
         r.mutable_market()->mutable_correlation()->RemoveLast();
       },
       "market.correlation size is 15: must be issuers^2 = 16"},
      {"CorrelationAsymmetric",
       [](auto& r) {
         UseCorrelation(r, {{0, 1, 0.5}, {1, 0, 0.4}});
       },
       "market.correlation[0, 1] is 0.5: the matrix must be symmetric, but [1, 0] is 0.4"},
      {"CorrelationDiagonalNotOne",
       [](auto& r) {
         UseCorrelation(r, {{2, 2, 0.9}});
       },
       "market.correlation[2, 2] is 0.9: the diagonal must be 1"},
      {"CorrelationEntryAboveOne",
       [](auto& r) {
         UseCorrelation(r, {{1, 3, 1.5}, {3, 1, 1.5}});
       },
       "market.correlation[1, 3] is 1.5: entries must be in [-1, 1]"},
      {"CorrelationNotPositiveDefinite",
       [](auto& r) {
         // Issuer 0 moves with 1 and 2, which move against each other.
         UseCorrelation(
             r, {{0, 1, 0.9}, {1, 0, 0.9}, {0, 2, 0.9}, {2, 0, 0.9}, {1, 2, -0.9}, {2, 1, -0.9}});
       },
       "market.correlation is not positive definite"},
      {"CorrelationForTooManyIssuers",
       [](auto& r) {
         UseGeneratedMarket(r);
         r.mutable_market()->mutable_generated()->set_issuers(4097);
         r.mutable_market()->add_correlation(1.0);
       },
       "market.correlation size is 1: a correlation matrix is accepted for at most 4096 "
       "issuers (here 4097)"},
  };
}

// The priority and the precision.
std::vector<BadRequestCase> PriorityAndPrecisionCases() {
  return {
      {"PriorityTooHigh", [](auto& r) { r.set_priority(101); },
       "priority is 101: must be in [-100, 100]"},
      {"PriorityTooLow", [](auto& r) { r.set_priority(-101); },
       "priority is -101: must be in [-100, 100]"},
      {"UnknownPrecision", [](auto& r) { r.set_precision(static_cast<v1::Precision>(7)); },
       "precision is 7: must be PRECISION_FP32 (0), PRECISION_TF32 (1) or PRECISION_BF16 (2)"},
  };
}

// Every case, in the order of the fields of a PriceRequest.
std::vector<BadRequestCase> BadRequestCases() {
  std::vector<BadRequestCase> cases;
  for (std::vector<BadRequestCase> (*group)() :
       {RequestCases, ExplicitMarketCases, GeneratedMarketCases, ScenarioCases,
        ColumnAndOutputCases, MomentsShortcutCases, CorrelationCases, PriorityAndPrecisionCases,
        BookCases, AttributionCases}) {
    const std::vector<BadRequestCase> more = group();
    cases.insert(cases.end(), more.begin(), more.end());
  }
  return cases;
}

void ExpectRefused(v1::Pricer::Stub& stub, const BadRequestCase& c) {
  SCOPED_TRACE(c.name);
  v1::PriceRequest request = SmallRequest();
  c.spoil(request);
  const PriceCall call = RunPrice(stub, request);
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << call.status.error_message();
  EXPECT_THAT(call.status.error_message(), HasSubstr(c.expected));
  EXPECT_TRUE(call.replies.empty())
      << "a refused request got " << call.replies.size() << " replies";
}

class BadRequestTest : public ::testing::TestWithParam<BadRequestCase> {};

TEST_P(BadRequestTest, IsRefusedNamingFieldAndValue) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  ExpectRefused(*NewStub(*server), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Fields, BadRequestTest, ::testing::ValuesIn(BadRequestCases()),
                         [](const auto& info) { return info.param.name; });

TEST(BadRequests, BaseRequestIsValid) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const PriceCall call = RunPrice(*NewStub(*server), SmallRequest());
  EXPECT_TRUE(call.status.ok()) << call.status.error_message();
}

// The edges of each new range are accepted: quantile levels 0 and 1, VaR and
// ES levels just inside (0, 1), 16 levels, priorities +-100 and a correlation
// on the edge of the tolerance.
TEST(BadRequests, EdgesOfTheRangesAreAccepted) {
  ServerOptions options;
  options.auth_tokens_file = TesterTokenFile();  // the right to priority 100
  std::unique_ptr<PricerServer> server = StartTestServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  v1::PriceRequest request = SmallRequest();
  Statistics(request).add_quantiles(0);
  Statistics(request).add_quantiles(1);
  Statistics(request).add_var(1e-9);
  Statistics(request).add_es(1 - 1e-9);
  for (int l = 1; l < 16; ++l) Statistics(request).add_var(0.5 + 0.01 * l);  // 16 in all
  // Within the 1e-9 tolerance of symmetry and of the unit diagonal.
  UseCorrelation(request, {{0, 1, 0.3}, {1, 0, 0.3 + 5e-10}, {3, 3, 1 + 5e-10}});
  // A cpu server accepts the lower GEMM precisions and computes in float32.
  request.set_precision(v1::PRECISION_BF16);
  for (int priority : {100, -100}) {
    request.set_priority(priority);
    const PriceCall call = RunPrice(*stub, request, kTesterToken);
    EXPECT_TRUE(call.status.ok()) << priority << ": " << call.status.error_message();
    ASSERT_FALSE(call.replies.empty());
    EXPECT_TRUE(call.replies.back().has_finished());
  }
}

TEST(BadRequests, ServerKeepsServingAfterAllOfThem) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  for (const BadRequestCase& c : BadRequestCases()) ExpectRefused(*stub, c);

  const int64_t issuers = 4, paths = 500, columns = 20;
  v1::PriceRequest request = SmallRequest(issuers, paths, columns);
  const std::vector<float> a = TestMatrix(issuers, columns);
  SetInlineMatrix(a, issuers, columns, &request);
  request.mutable_output()->set_full(true);
  request.mutable_output()->set_terminal_prices(true);
  const PriceCall call = RunPrice(*stub, request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ExpectResultIsProduct(call, request, a);
  EXPECT_EQ(ListDevices(*stub).devices(0).bytes_in_use(), 0);
}

}  // namespace
}  // namespace pricer::testing
