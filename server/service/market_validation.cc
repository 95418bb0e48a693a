#include "server/service/market_validation.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/model/correlation.h"
#include "server/service/field_checks.h"
#include "server/service/request_validation.h"

namespace pricer {
namespace {

// A generated market of at most this many issuers is drawn here, like the
// checks of an explicit market of that size (O(N), well under a
// millisecond); a larger one is left to the job's preparation.
constexpr int64_t kMaxIssuersDrawnAtValidation = 10'000;

absl::Status ToExplicitMarket(const v1::ExplicitMarket& e, Market* out) {
  Market& market = *out;
  RETURN_IF_ERROR(CheckRange("market.explicit.spot size", e.spot_size(), 1, kMaxIssuers));
  if (e.volatility_size() != e.spot_size()) {
    return Invalid("market.explicit.volatility size", e.volatility_size(),
                   absl::StrCat("must equal the spot size ", e.spot_size()));
  }
  for (int i = 0; i < e.spot_size(); ++i) {
    const std::string field = absl::StrCat("market.explicit.spot[", i, "]");
    RETURN_IF_ERROR(CheckFinite(field, e.spot(i)));
    if (!(e.spot(i) > 0) || e.spot(i) > kMaxSpot) {
      return Invalid(field, e.spot(i), absl::StrCat("must be in (0, ", kMaxSpot, "]"));
    }
  }
  for (int i = 0; i < e.volatility_size(); ++i) {
    const std::string field = absl::StrCat("market.explicit.volatility[", i, "]");
    RETURN_IF_ERROR(CheckFinite(field, e.volatility(i)));
    if (e.volatility(i) < 0) return Invalid(field, e.volatility(i), "must be >= 0");
  }
  market.spot.assign(e.spot().begin(), e.spot().end());
  market.volatility.assign(e.volatility().begin(), e.volatility().end());
  return absl::OkStatus();
}

absl::Status ToGeneratedMarket(const v1::GeneratedMarket& g, Market* out, Preparation* prep) {
  Market& market = *out;
  RETURN_IF_ERROR(CheckRange("market.generated.issuers", g.issuers(), 1, kMaxIssuers));
  for (auto [field, value] : {std::pair{"market.generated.spot_min", g.spot_min()},
                              {"market.generated.spot_max", g.spot_max()},
                              {"market.generated.volatility_min", g.volatility_min()},
                              {"market.generated.volatility_max", g.volatility_max()}}) {
    RETURN_IF_ERROR(CheckFinite(field, value));
  }
  if (!(g.spot_min() > 0)) return Invalid("market.generated.spot_min", g.spot_min(), "must be > 0");
  if (g.spot_max() < g.spot_min() || g.spot_max() > kMaxSpot) {
    return Invalid("market.generated.spot_max", g.spot_max(),
                   absl::StrCat("must be in [spot_min ", g.spot_min(), ", ", kMaxSpot, "]"));
  }
  if (g.volatility_min() < 0) {
    return Invalid("market.generated.volatility_min", g.volatility_min(), "must be >= 0");
  }
  if (g.volatility_max() < g.volatility_min()) {
    return Invalid("market.generated.volatility_max", g.volatility_max(),
                   absl::StrCat("must be >= volatility_min ", g.volatility_min()));
  }
  const MarketDraw draw{g.issuers(),  g.seed(),           g.spot_min(),
                        g.spot_max(), g.volatility_min(), g.volatility_max()};
  if (g.issuers() <= kMaxIssuersDrawnAtValidation) {
    market.spot = DrawSpots(draw);
    market.volatility = DrawVolatilities(draw);
    return absl::OkStatus();
  }
  // Drawn by the job's preparation; the sizes are final now.
  prep->draw = draw;
  market.spot.assign(static_cast<size_t>(g.issuers()), 0.0);
  market.volatility.assign(static_cast<size_t>(g.issuers()), 0.0);
  return absl::OkStatus();
}

// The rate, the maturity and the volatilities against them.
absl::Status CheckModel(const v1::PriceRequest& request, const Market& market) {
  const v1::Market& m = request.market();
  RETURN_IF_ERROR(CheckFinite("rate", request.rate()));
  if (request.rate() < -1 || request.rate() > 1) {
    return Invalid("rate", request.rate(), "must be in [-1, 1]");
  }
  RETURN_IF_ERROR(CheckFinite("maturity", request.maturity()));
  if (!(request.maturity() > 0) || request.maturity() > 100) {
    return Invalid("maturity", request.maturity(), "must be in (0, 100] years");
  }
  if (std::abs(request.rate()) * request.maturity() > kMaxRateTimesMaturity) {
    return Invalid("rate", request.rate(),
                   absl::StrCat("|rate| * maturity must be <= ", kMaxRateTimesMaturity,
                                " (maturity ", request.maturity(), ")"));
  }
  // sigma * sqrt(T) bounds the largest shock, and so keeps ST finite in
  // float32; a generated market may draw up to volatility_max.
  const double root_t = std::sqrt(request.maturity());
  const int64_t checked = m.has_generated() ? 1 : market.issuers();
  for (int64_t i = 0; i < checked; ++i) {
    const double value = m.has_generated() ? m.generated().volatility_max() : market.volatility[i];
    if (value * root_t > kMaxVolatilityTimesRootMaturity) {
      const std::string field = m.has_generated()
                                    ? "market.generated.volatility_max"
                                    : absl::StrCat("market.explicit.volatility[", i, "]");
      return Invalid(
          field, value,
          absl::StrCat("volatility * sqrt(maturity) must be <= ", kMaxVolatilityTimesRootMaturity,
                       " (maturity ", request.maturity(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ToCorrelation(const v1::Market& m, Market* out, Preparation* prep) {
  Market& market = *out;
  const int64_t n = market.issuers();
  if (n > kMaxCorrelatedIssuers) {
    return Invalid("market.correlation size", m.correlation_size(),
                   absl::StrCat("a correlation matrix is accepted for at most ",
                                kMaxCorrelatedIssuers, " issuers (here ", n, ")"));
  }
  if (m.correlation_size() != n * n) {
    return Invalid("market.correlation size", m.correlation_size(),
                   absl::StrCat("must be issuers^2 = ", n * n));
  }
  // Factored by the job's preparation (a Cholesky of up to 4096 x 4096);
  // its size marks the issuers correlated now.
  prep->correlation.assign(m.correlation().begin(), m.correlation().end());
  RETURN_IF_ERROR(CheckCorrelation(prep->correlation, n));
  market.correlation_factor.assign(static_cast<size_t>(n * n), 0.0f);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Market> ToMarket(const v1::PriceRequest& request, Preparation* prep) {
  Market market;
  const v1::Market& m = request.market();
  switch (m.source_case()) {
    case v1::Market::kExplicit:
      RETURN_IF_ERROR(ToExplicitMarket(m.explicit_(), &market));
      break;
    case v1::Market::kGenerated:
      RETURN_IF_ERROR(ToGeneratedMarket(m.generated(), &market, prep));
      break;
    case v1::Market::SOURCE_NOT_SET:
      return absl::InvalidArgumentError(
          "market is not set: give market.explicit or market.generated");
  }
  RETURN_IF_ERROR(CheckModel(request, market));
  market.rate = request.rate();
  market.maturity = request.maturity();
  if (m.correlation_size() > 0) RETURN_IF_ERROR(ToCorrelation(m, &market, prep));
  return market;
}

}  // namespace pricer
