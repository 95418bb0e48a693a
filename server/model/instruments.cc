#include "server/model/instruments.h"

#include <cmath>

#include "server/model/job_spec.h"

namespace pricer {
namespace {

std::vector<InstrumentTerms> TermsAt(const Market& market,
                                     const std::vector<Instrument>& instruments, double time) {
  std::vector<InstrumentTerms> terms;
  terms.reserve(instruments.size());
  for (const Instrument& instrument : instruments) {
    const auto issuer = static_cast<size_t>(instrument.issuer);
    terms.push_back(
        TermsOf(instrument.issuer, instrument.type, instrument.strike,
                instrument.type == InstrumentType::kStock ? 0.0 : instrument.expiry - time,
                market.rate, instrument.volatility.value_or(market.volatility[issuer])));
    terms.back().issuer_volatility = !instrument.volatility.has_value();
  }
  return terms;
}

}  // namespace

InstrumentTerms TermsOf(int64_t issuer, InstrumentType type, double strike, double tau, double rate,
                        double volatility) {
  return InstrumentTerms{
      issuer,         type, strike * std::exp(-rate * tau), volatility * std::sqrt(tau),
      std::sqrt(tau), false};
}

std::vector<InstrumentTerms> TermsAtHorizon(const Market& market,
                                            const std::vector<Instrument>& instruments) {
  return TermsAt(market, instruments, market.maturity);
}

std::vector<InstrumentTerms> TermsToday(const Market& market,
                                        const std::vector<Instrument>& instruments) {
  return TermsAt(market, instruments, 0.0);
}

std::vector<double> InstrumentValuesToday(const Market& market,
                                          const std::vector<Instrument>& instruments) {
  const std::vector<InstrumentTerms> terms = TermsToday(market, instruments);
  std::vector<double> values(terms.size());
  for (size_t k = 0; k < terms.size(); ++k) {
    values[k] = InstrumentValue(terms[k], market.spot[static_cast<size_t>(terms[k].issuer)]);
  }
  return values;
}

void InstrumentValuesAtHorizon(const std::vector<InstrumentTerms>& terms, const float* st,
                               int64_t paths, int64_t first, int64_t last, float* v) {
  for (int64_t k = first; k < last; ++k) {
    const InstrumentTerms& t = terms[static_cast<size_t>(k)];
    const float* s = st + t.issuer * paths;
    float* out = v + k * paths;
    for (int64_t p = 0; p < paths; ++p) out[p] = static_cast<float>(InstrumentValue(t, s[p]));
  }
}

const char* InstrumentTypeName(InstrumentType type) {
  switch (type) {
    case InstrumentType::kStock:
      return "stock";
    case InstrumentType::kForward:
      return "forward";
    case InstrumentType::kCall:
      return "call";
    case InstrumentType::kPut:
      return "put";
  }
  return "unknown";
}

}  // namespace pricer
