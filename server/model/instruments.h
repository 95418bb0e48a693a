// A book of instruments on the issuers (docs/risk.md, "Books"): stocks,
// forwards, European calls and puts, each revalued on every path at the
// horizon. Their values at the horizon form V (P x K), which takes ST's
// place in the shard GEMMs (SC = V A, A with one row per instrument); their
// values today form V0's weights. Shared by the cpu and cuda backends.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "server/model/host_device.h"

namespace pricer {

struct Market;

enum class InstrumentType : int32_t { kStock = 0, kForward = 1, kCall = 2, kPut = 3 };

struct Instrument {
  int64_t issuer = 0;  // index into the market
  InstrumentType type = InstrumentType::kStock;
  double strike = 0;  // > 0; unused for a stock
  double expiry = 0;  // years from today, >= the horizon; unused for a stock
  // Of its revaluation; the issuer's when unset.
  std::optional<double> volatility;
};

// What revaluing one instrument takes, computed once per job (TermsOf) so
// that the per-path formula holds no exp or sqrt of its own: its
// discounted strike K e^{-r tau} and width sigma sqrt(tau), for the time
// left tau (expiry - the valuation time), in float64.
struct InstrumentTerms {
  int64_t issuer = 0;
  InstrumentType type = InstrumentType::kStock;
  double discounted_strike = 0;
  double width = 0;
  double root_tau = 0;             // sqrt(tau), for the vega
  bool issuer_volatility = false;  // its volatility is its issuer's (it has none of its own)
};
InstrumentTerms TermsOf(int64_t issuer, InstrumentType type, double strike, double tau, double rate,
                        double volatility);

// Phi(x), the standard normal distribution function (0.7071... = 1 / sqrt(2)).
PRICER_HOST_DEVICE inline double StandardNormalCdf(double x) {
  return 0.5 * erfc(-x * 0.70710678118654752440);
}

// The instrument's value at spot `s`: a stock s; a forward s - K e^{-r tau};
// a call or put by Black-Scholes, which at tau = 0 (or volatility 0) is the
// payoff against the discounted strike. Put-call parity holds to rounding:
// call - put = forward.
PRICER_HOST_DEVICE inline double InstrumentValue(const InstrumentTerms& t, double s) {
  if (t.type == InstrumentType::kStock) return s;
  const double strike = t.discounted_strike;
  if (t.type == InstrumentType::kForward) return s - strike;
  const double width = t.width;
  const bool call = t.type == InstrumentType::kCall;
  if (!(width > 0)) return call ? fmax(s - strike, 0.0) : fmax(strike - s, 0.0);
  const double d1 = (log(s / strike) + 0.5 * width * width) / width;
  const double d2 = d1 - width;
  return call ? s * StandardNormalCdf(d1) - strike * StandardNormalCdf(d2)
              : strike * StandardNormalCdf(-d2) - s * StandardNormalCdf(-d1);
}

// dV/ds, the instrument's delta at spot `s`: 1 for a stock and a forward,
// N(d1) for a call, N(d1) - 1 for a put (the payoff's slope at tau = 0 or
// volatility 0).
PRICER_HOST_DEVICE inline double InstrumentDelta(const InstrumentTerms& t, double s) {
  if (t.type == InstrumentType::kStock || t.type == InstrumentType::kForward) return 1.0;
  const bool call = t.type == InstrumentType::kCall;
  const double strike = t.discounted_strike;
  if (!(t.width > 0)) return call ? (s > strike ? 1.0 : 0.0) : (s < strike ? -1.0 : 0.0);
  const double d1 = (log(s / strike) + 0.5 * t.width * t.width) / t.width;
  return call ? StandardNormalCdf(d1) : StandardNormalCdf(d1) - 1.0;
}

// dV/dsigma through the Black-Scholes formula (its own volatility): s phi(d1)
// sqrt(tau) for a call or put, 0 for a stock, a forward and at tau = 0 or
// volatility 0 (0.3989... = 1 / sqrt(2 pi)).
PRICER_HOST_DEVICE inline double InstrumentVega(const InstrumentTerms& t, double s) {
  if (t.type == InstrumentType::kStock || t.type == InstrumentType::kForward) return 0.0;
  if (!(t.width > 0)) return 0.0;
  const double d1 = (log(s / t.discounted_strike) + 0.5 * t.width * t.width) / t.width;
  return s * 0.39894228040143267794 * exp(-0.5 * d1 * d1) * t.root_tau;
}

// The terms of each instrument at the horizon (tau = expiry - maturity) or
// today (tau = expiry), with the market's rate and the issuers' volatilities
// where an instrument has none of its own.
std::vector<InstrumentTerms> TermsAtHorizon(const Market& market,
                                            const std::vector<Instrument>& instruments);
std::vector<InstrumentTerms> TermsToday(const Market& market,
                                        const std::vector<Instrument>& instruments);

// The instruments' values today (their spots' values at time 0), float64.
std::vector<double> InstrumentValuesToday(const Market& market,
                                          const std::vector<Instrument>& instruments);

// Columns [first, last) of V (P x K, column-major): V[p, k] =
// InstrumentValue(terms[k], ST[p, issuer_k]) rounded to float32, from ST
// (P x N, column-major).
void InstrumentValuesAtHorizon(const std::vector<InstrumentTerms>& terms, const float* st,
                               int64_t paths, int64_t first, int64_t last, float* v);

const char* InstrumentTypeName(InstrumentType type);

}  // namespace pricer
