// The shocks behind the terminal prices of Price calls of a real in-process
// server: correlated shocks are the correlation factor times the independent
// ones, and antithetic paths negate the shocks of their partner.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "tests/service/service_test_util.h"

namespace pricer::testing {
namespace {

// The shocks x[p, i] behind ST[p, i] of an explicit market:
// x = (log(ST / S0) - (r - s^2 / 2) T) / (s sqrt(T)), column-major P x N.
std::vector<double> Shocks(const PriceCall& call, const v1::PriceRequest& request) {
  const v1::ExplicitMarket& market = request.market().explicit_();
  const int64_t issuers = market.spot_size();
  const int64_t paths = request.paths();
  const std::vector<float> st = AssembleTerminalPrices(call, paths, issuers);
  const double t = request.maturity();
  std::vector<double> x(st.size());
  for (int64_t i = 0; i < issuers; ++i) {
    const double s = market.volatility(i);
    for (int64_t p = 0; p < paths; ++p) {
      x[i * paths + p] =
          (std::log(st[i * paths + p] / market.spot(i)) - (request.rate() - s * s / 2) * t) /
          (s * std::sqrt(t));
    }
  }
  return x;
}

double SampleCorrelation(const double* x, const double* y, int64_t n) {
  double mx = 0, my = 0;
  for (int64_t p = 0; p < n; ++p) {
    mx += x[p];
    my += y[p];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (int64_t p = 0; p < n; ++p) {
    sxy += (x[p] - mx) * (y[p] - my);
    sxx += (x[p] - mx) * (x[p] - mx);
    syy += (y[p] - my) * (y[p] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

// Two issuers with correlation 0.5: L = [[1, 0], [0.5, sqrt(0.75)]], so
// issuer 0 keeps its independent shock z0 and issuer 1 gets
// 0.5 z0 + sqrt(0.75) z1, with the same z as the uncorrelated request.
TEST(Price, CorrelatedShocksAreTheFactorTimesTheIndependentOnes) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const int64_t paths = 20'000;
  v1::PriceRequest request = SmallRequest(/*issuers=*/2, paths, /*columns=*/3);
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->mutable_statistics();
  const PriceCall independent = RunPrice(*stub, request);
  ASSERT_TRUE(independent.status.ok()) << independent.status.error_message();
  for (double c : {1.0, 0.5, 0.5, 1.0}) request.mutable_market()->add_correlation(c);
  const PriceCall correlated = RunPrice(*stub, request);
  ASSERT_TRUE(correlated.status.ok()) << correlated.status.error_message();
  ASSERT_TRUE(correlated.replies.back().has_finished());

  const std::vector<double> z = Shocks(independent, request);
  const std::vector<double> x = Shocks(correlated, request);
  ASSERT_EQ(x.size(), static_cast<size_t>(2 * paths));
  double worst0 = 0, worst1 = 0;
  for (int64_t p = 0; p < paths; ++p) {
    worst0 = std::max(worst0, std::abs(x[p] - z[p]));
    worst1 =
        std::max(worst1, std::abs(x[paths + p] - (0.5 * z[p] + std::sqrt(0.75) * z[paths + p])));
  }
  EXPECT_LT(worst0, 1e-4);
  EXPECT_LT(worst1, 1e-4);
  // Standard error of a sample correlation of 0.5 here: 0.75 / sqrt(P) ~ 0.005.
  EXPECT_NEAR(SampleCorrelation(x.data(), x.data() + paths, paths), 0.5, 0.03);
  EXPECT_NEAR(SampleCorrelation(z.data(), z.data() + paths, paths), 0.0, 0.03);
}

// Pair sums x[2k, i] + x[2k + 1, i] of the shocks, the largest in magnitude.
double WorstPairSum(const std::vector<double>& x, int64_t paths, int64_t issuers) {
  double worst = 0;
  for (int64_t i = 0; i < issuers; ++i) {
    for (int64_t p = 0; p + 1 < paths; p += 2) {
      worst = std::max(worst, std::abs(x[i * paths + p] + x[i * paths + p + 1]));
    }
  }
  return worst;
}

TEST(Price, AntitheticPathsNegateTheShocksOfTheirPartner) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const int64_t issuers = 5, paths = 1001;  // odd: the last path has no partner
  v1::PriceRequest request = SmallRequest(issuers, paths, /*columns=*/10);
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->mutable_statistics();
  const PriceCall plain = RunPrice(*stub, request);
  ASSERT_TRUE(plain.status.ok()) << plain.status.error_message();
  request.set_antithetic(true);
  const PriceCall antithetic = RunPrice(*stub, request);
  ASSERT_TRUE(antithetic.status.ok()) << antithetic.status.error_message();

  const std::vector<double> z = Shocks(plain, request);
  const std::vector<double> x = Shocks(antithetic, request);
  EXPECT_LT(WorstPairSum(x, paths, issuers), 1e-4);
  EXPECT_GT(WorstPairSum(z, paths, issuers), 1.0);  // without it, pairs are independent
  // Even paths, the last one included, keep the shocks of the plain request.
  double worst = 0;
  for (int64_t i = 0; i < issuers; ++i) {
    for (int64_t p = 0; p < paths; p += 2) {
      worst = std::max(worst, std::abs(x[i * paths + p] - z[i * paths + p]));
    }
  }
  EXPECT_LT(worst, 1e-5);

  // With a correlation too: x = L z is linear, so pairs still cancel.
  std::vector<double> c(issuers * issuers, 0.3);
  for (int64_t i = 0; i < issuers; ++i) c[i * issuers + i] = 1.0;
  request.mutable_market()->mutable_correlation()->Assign(c.begin(), c.end());
  const PriceCall both = RunPrice(*stub, request);
  ASSERT_TRUE(both.status.ok()) << both.status.error_message();
  const std::vector<double> y = Shocks(both, request);
  EXPECT_LT(WorstPairSum(y, paths, issuers), 1e-4);
  double moved = 0;  // issuer 1 now mixes in issuer 0's shocks
  for (int64_t p = 0; p < paths; ++p)
    moved = std::max(moved, std::abs(y[paths + p] - z[paths + p]));
  EXPECT_GT(moved, 0.1);
}

}  // namespace
}  // namespace pricer::testing
