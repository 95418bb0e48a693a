// The instruments' revaluation (server/model/instruments.h) against
// published Black-Scholes values, an independent erf form of the formula,
// put-call parity and the payoff at expiry.
#include "server/model/instruments.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "server/model/job_spec.h"

namespace pricer {
namespace {

InstrumentTerms Terms(InstrumentType type, double strike, double tau, double rate,
                      double volatility) {
  return TermsOf(0, type, strike, tau, rate, volatility);
}

// Black-Scholes written with erf and the undiscounted forward, a second form.
double ReferenceOption(bool call, double s, double k, double r, double sigma, double tau) {
  const double forward = s * std::exp(r * tau), w = sigma * std::sqrt(tau);
  const double d1 = std::log(forward / k) / w + w / 2, d2 = d1 - w;
  auto phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  const double undiscounted =
      call ? forward * phi(d1) - k * phi(d2) : k * phi(-d2) - forward * phi(-d1);
  return std::exp(-r * tau) * undiscounted;
}

TEST(InstrumentsTest, OptionsMatchHullsExample) {
  // Hull, Options, Futures and Other Derivatives, example 15.6: S0 = 42,
  // K = 40, r = 10%, sigma = 20%, T = 0.5: c = 4.76, p = 0.81.
  const double call = InstrumentValue(Terms(InstrumentType::kCall, 40, 0.5, 0.1, 0.2), 42);
  const double put = InstrumentValue(Terms(InstrumentType::kPut, 40, 0.5, 0.1, 0.2), 42);
  EXPECT_NEAR(call, 4.76, 0.005);
  EXPECT_NEAR(put, 0.81, 0.005);
}

TEST(InstrumentsTest, OptionsMatchTheErfFormAcrossMoneynessAndTime) {
  for (double s : {1.0, 50.0, 99.0, 100.0, 101.0, 200.0, 1e4}) {
    for (double tau : {1e-4, 0.25, 1.0, 10.0}) {
      for (double sigma : {0.01, 0.2, 1.5}) {
        for (bool call : {true, false}) {
          SCOPED_TRACE(testing::Message() << "s " << s << " tau " << tau << " sigma " << sigma
                                          << (call ? " call" : " put"));
          const auto type = call ? InstrumentType::kCall : InstrumentType::kPut;
          const double value = InstrumentValue(Terms(type, 100, tau, 0.03, sigma), s);
          const double expected = ReferenceOption(call, s, 100, 0.03, sigma, tau);
          // Deep out of the money both are ~0: an absolute floor of 1e-12 of the strike.
          EXPECT_NEAR(value, expected, 1e-10 * std::abs(expected) + 1e-10);
          EXPECT_GE(value, 0);
        }
      }
    }
  }
}

TEST(InstrumentsTest, PutCallParityHoldsToRounding) {
  for (double s : {0.5, 80.0, 100.0, 130.0, 5e3}) {
    for (double tau : {0.0, 0.1, 3.0}) {
      const double call = InstrumentValue(Terms(InstrumentType::kCall, 100, tau, 0.05, 0.4), s);
      const double put = InstrumentValue(Terms(InstrumentType::kPut, 100, tau, 0.05, 0.4), s);
      const double forward =
          InstrumentValue(Terms(InstrumentType::kForward, 100, tau, 0.05, 0.4), s);
      EXPECT_NEAR(call - put, forward, 1e-13 * (call + put + std::abs(forward)))
          << "s " << s << " tau " << tau;
      EXPECT_DOUBLE_EQ(forward, s - 100 * std::exp(-0.05 * tau));
    }
  }
}

TEST(InstrumentsTest, AtExpiryOrWithoutVolatilityAnOptionIsItsPayoff) {
  for (double s : {0.0, 90.0, 100.0, 110.0}) {
    EXPECT_EQ(InstrumentValue(Terms(InstrumentType::kCall, 100, 0, 0.05, 0.3), s),
              std::max(s - 100, 0.0));
    EXPECT_EQ(InstrumentValue(Terms(InstrumentType::kPut, 100, 0, 0.05, 0.3), s),
              std::max(100 - s, 0.0));
    // No volatility: the payoff against the discounted strike.
    const double strike = 100 * std::exp(-0.05 * 2);
    EXPECT_EQ(InstrumentValue(Terms(InstrumentType::kCall, 100, 2, 0.05, 0), s),
              std::max(s - strike, 0.0));
    EXPECT_EQ(InstrumentValue(Terms(InstrumentType::kStock, 100, 2, 0.05, 0.3), s), s);
  }
  // A spot of 0 (ST underflowed) leaves no NaN.
  EXPECT_EQ(InstrumentValue(Terms(InstrumentType::kCall, 100, 1, 0.05, 0.3), 0.0), 0.0);
  EXPECT_NEAR(InstrumentValue(Terms(InstrumentType::kPut, 100, 1, 0.05, 0.3), 0.0),
              100 * std::exp(-0.05), 1e-12);
}

TEST(InstrumentsTest, TermsTakeTheHorizonTheRateAndTheIssuersVolatility) {
  Market market;
  market.spot = {10, 20};
  market.volatility = {0.1, 0.4};
  market.rate = 0.02;
  market.maturity = 0.5;
  std::vector<Instrument> book(3);
  book[0] = {1, InstrumentType::kCall, 20, 1.5, std::nullopt};
  book[1] = {0, InstrumentType::kPut, 9, 0.5, 0.25};
  book[2] = {1, InstrumentType::kStock, 0, 0, std::nullopt};
  const std::vector<InstrumentTerms> horizon = TermsAtHorizon(market, book);
  // tau = 1.0 and the issuer's 0.4; the rate 0.02 in the discounted strike.
  EXPECT_DOUBLE_EQ(horizon[0].width, 0.4 * std::sqrt(1.0));
  EXPECT_DOUBLE_EQ(horizon[0].discounted_strike, 20 * std::exp(-0.02 * 1.0));
  // tau = 0: no width, the strike itself; its own 0.25 shows today (tau 0.5).
  EXPECT_DOUBLE_EQ(horizon[1].width, 0.0);
  EXPECT_DOUBLE_EQ(horizon[1].discounted_strike, 9.0);
  EXPECT_DOUBLE_EQ(TermsToday(market, book)[1].width, 0.25 * std::sqrt(0.5));
  const std::vector<double> today = InstrumentValuesToday(market, book);
  EXPECT_NEAR(today[0], ReferenceOption(true, 20, 20, 0.02, 0.4, 1.5), 1e-12);
  EXPECT_NEAR(today[1], ReferenceOption(false, 10, 9, 0.02, 0.25, 0.5), 1e-12);
  EXPECT_EQ(today[2], 20);
}

}  // namespace
}  // namespace pricer
