// Request validation (ToJobSpec) and the job's preparation (the market
// draw, the Cholesky factor, the stored-set read) on the bytes of a
// PriceRequest, as any client can send them.
#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "server/service/request_validation.h"

namespace {

// The set the seed corpus names (tests/fuzz/make_corpus.py): 2 x 3, values
// 0.5, 1.0, ..., 3.0 column-major.
pricer::ScenarioStore& Store() {
  static pricer::ScenarioStore* store = [] {
    auto* s = new pricer::ScenarioStore(64 << 20, "");
    if (!s->Put(2, 3, {0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f}).ok()) std::abort();
    return s;
  }();
  return *store;
}

// A generated market is drawn issuer by issuer (up to 100,000 are accepted):
// at validation up to 10,000 issuers, by the preparation above, so this
// bound reaches both while the fuzzer spends its time in the checks, not
// the draw.
constexpr int64_t kMaxGeneratedIssuers = 16'384;

// A precision target, if any, that the rounds can run: a selected
// statistic and level with its errors, a bound, room for the paths.
bool TargetConsistent(const pricer::JobSpec& spec) {
  using S = pricer::PrecisionTarget::Statistic;
  const pricer::PrecisionTarget& t = spec.target;
  if (!t.any()) return true;
  const pricer::StatisticsSelection& s = spec.output.statistics;
  const std::vector<double>* levels = t.statistic == S::kQuantile ? &s.quantiles
                                      : t.statistic == S::kVar    ? &s.var
                                      : t.statistic == S::kEs     ? &s.es
                                                                  : nullptr;
  const bool selected = levels != nullptr
                            ? t.level_index >= 0 && t.level_index < int64_t(levels->size()) &&
                                  (*levels)[size_t(t.level_index)] == t.level
                            : (t.statistic == S::kMean ? s.mean : s.stddev);
  return selected && s.errors && !spec.output.full && !spec.output.terminal_prices &&
         (t.relative > 0 || t.absolute > 0) && t.relative >= 0 && t.absolute >= 0 &&
         t.max_paths >= spec.paths && t.RoundPaths(spec.paths).back() <= t.max_paths;
}

// Contributed levels, if any: each one of the selection's levels of its
// measure, not with the moments shortcut; delta and vega only with them.
bool ContributionsConsistent(const pricer::StatisticsSelection& s) {
  for (auto [contributed, levels] :
       {std::pair{&s.es_contributions, &s.es}, std::pair{&s.var_contributions, &s.var}}) {
    for (const double level : *contributed) {
      if (std::find(levels->begin(), levels->end(), level) == levels->end()) return false;
    }
  }
  const bool any = s.contribution_levels() > 0;
  return (!any || !s.from_covariance) && (any || !(s.delta || s.vega));
}

// What a spec that validated and prepared must hold, whatever the request.
bool Consistent(const pricer::JobSpec& spec) {
  const pricer::ScenarioMatrix& a = spec.scenarios;
  const int64_t n = spec.market.issuers();
  const int64_t rows = spec.position_rows();  // of A: N, or K instruments
  if (n < 1 || spec.market.volatility.size() != spec.market.spot.size() || a.rows() != rows) {
    return false;
  }
  for (const pricer::Instrument& instrument : spec.instruments) {
    if (instrument.issuer < 0 || instrument.issuer >= n) return false;
  }
  if (spec.historical()) {
    const pricer::ScenarioMatrix& r = *spec.returns;
    if (r.rows() != spec.paths || r.columns() != n || r.shared_values() == nullptr ||
        r.shared_values()->size() != size_t(n * spec.paths)) {
      return false;
    }
  }
  if (spec.market.correlated() && spec.market.correlation_factor.size() != size_t(n * n)) {
    return false;
  }
  if (!a.generated() &&
      (a.shared_values() == nullptr || a.shared_values()->size() != size_t(rows * a.columns()))) {
    return false;
  }
  return 0 <= spec.column_begin && spec.column_begin < spec.column_end &&
         spec.column_end <= a.columns() && TargetConsistent(spec) &&
         ContributionsConsistent(spec.output.statistics);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pricer::v1::PriceRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (request.market().generated().issuers() > kMaxGeneratedIssuers) return 0;
  absl::StatusOr<pricer::JobSpec> spec = pricer::ToJobSpec(request, Store());
  if (!spec.ok()) return 0;
  if (spec->prepare && !spec->prepare(*spec).ok()) return 0;
  if (!Consistent(*spec)) std::abort();
  return 0;
}
