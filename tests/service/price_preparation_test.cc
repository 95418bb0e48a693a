// A job's preparation (server/service/job_preparation.h): a generated market
// drawn at validation (small) or by the job's first engine task (large) gives
// the terminal prices of the same market sent explicitly, bit for bit. (A
// correlation its factorisation refuses gets no reply at all: the
// CorrelationNotPositiveDefinite case of price_validation_test.cc.)
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "server/model/job_spec.h"
#include "tests/service/service_test_util.h"

namespace pricer::testing {
namespace {

constexpr int64_t kPaths = 4;

v1::PriceRequest GeneratedMarketRequest(int64_t issuers) {
  v1::PriceRequest request = SmallRequest(1, kPaths, 1);
  v1::GeneratedMarket* g = request.mutable_market()->mutable_generated();
  g->set_issuers(issuers);
  g->set_seed(9);
  g->set_spot_min(5);
  g->set_spot_max(10);
  g->set_volatility_min(0.1);
  g->set_volatility_max(0.6);
  request.mutable_output()->set_terminal_prices(true);
  return request;
}

// The same market, drawn here by the model's own rule and sent explicitly.
v1::PriceRequest ExplicitTwin(const v1::PriceRequest& generated) {
  const v1::GeneratedMarket& g = generated.market().generated();
  const MarketDraw draw{g.issuers(),  g.seed(),           g.spot_min(),
                        g.spot_max(), g.volatility_min(), g.volatility_max()};
  v1::PriceRequest request = generated;
  v1::ExplicitMarket* e = request.mutable_market()->mutable_explicit_();
  for (double spot : DrawSpots(draw)) e->add_spot(spot);
  for (double volatility : DrawVolatilities(draw)) e->add_volatility(volatility);
  return request;
}

void ExpectGeneratedEqualsExplicit(int64_t issuers) {
  SCOPED_TRACE(issuers);
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const v1::PriceRequest generated = GeneratedMarketRequest(issuers);
  const v1::PriceRequest twin = ExplicitTwin(generated);
  const PriceCall drawn = RunPrice(*stub, generated);
  const PriceCall sent = RunPrice(*stub, twin);
  ASSERT_TRUE(drawn.status.ok()) << drawn.status.error_message();
  ASSERT_TRUE(sent.status.ok()) << sent.status.error_message();
  ASSERT_TRUE(drawn.replies.front().has_accepted());
  EXPECT_EQ(drawn.replies.front().accepted().issuers(), issuers);
  EXPECT_EQ(AssembleTerminalPrices(drawn, kPaths, issuers),
            AssembleTerminalPrices(sent, kPaths, issuers));
}

TEST(Preparation, ASmallGeneratedMarketEqualsTheSameMarketSentExplicitly) {
  ExpectGeneratedEqualsExplicit(9'000);  // drawn at validation
}

TEST(Preparation, ALargeGeneratedMarketDrawnByTheJobEqualsTheSameMarketSentExplicitly) {
  ExpectGeneratedEqualsExplicit(12'000);  // drawn by the job's first task
}

}  // namespace
}  // namespace pricer::testing
