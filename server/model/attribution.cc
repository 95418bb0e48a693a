#include "server/model/attribution.h"

#include <algorithm>
#include <cmath>

#include "server/model/job_spec.h"

namespace pricer {

int64_t VarWindowHalfWidth(int64_t rows) {
  return static_cast<int64_t>(std::floor(std::sqrt(static_cast<double>(rows)) / 2));
}

TailBand EsTail(double level, int64_t rows) {
  return {0, QuantileRankOf(1.0 - level, rows).low, false};
}

TailBand VarWindow(double level, int64_t rows) {
  const int64_t low = QuantileRankOf(1.0 - level, rows).low;
  const int64_t w = VarWindowHalfWidth(rows);
  TailBand band;
  band.first = std::max<int64_t>(0, low - w);
  band.last = std::min(rows - 1, low + 1 + w);
  band.bounded = band.first > 0;
  return band;
}

std::vector<TailBand> ContributionBands(const StatisticsSelection& selection, int64_t rows) {
  std::vector<TailBand> bands;
  for (double level : selection.es_contributions) bands.push_back(EsTail(level, rows));
  for (double level : selection.var_contributions) bands.push_back(VarWindow(level, rows));
  return bands;
}

std::vector<InstrumentTerms> RowTerms(const JobSpec& spec, bool today) {
  if (!spec.instruments.empty()) {
    return today ? TermsToday(spec.market, spec.instruments)
                 : TermsAtHorizon(spec.market, spec.instruments);
  }
  std::vector<InstrumentTerms> terms;
  for (int64_t i = 0; i < spec.market.issuers(); ++i) {
    terms.push_back(TermsOf(i, InstrumentType::kStock, 0, 0, spec.market.rate, 0));
  }
  return terms;
}

RowDerivatives DerivativesToday(const JobSpec& spec) {
  RowDerivatives today;
  for (const InstrumentTerms& t : RowTerms(spec, true)) {
    const double spot = spec.market.spot[static_cast<size_t>(t.issuer)];
    today.delta.push_back(InstrumentDelta(t, spot));
    today.vega.push_back(t.issuer_volatility ? InstrumentVega(t, spot) : 0.0);
  }
  return today;
}

void BandPaths(const float* values, const int32_t* candidates, int64_t count, TailBand band,
               float lo, float hi, int32_t* paths) {
  // Ranks as a stable sort gives them: the ties at a value v take ranks
  // count(< v), count(< v) + 1, ... in path order. The band skips the ties
  // at lo under rank `first` and takes those at hi up to rank `last`.
  int64_t under_lo = 0, under_hi = 0;
  for (int64_t i = 0; i < count; ++i) {
    const float v = values[candidates[i]];
    under_lo += v < lo ? 1 : 0;
    under_hi += v < hi ? 1 : 0;
  }
  int64_t n = 0;
  int64_t skip_lo = band.bounded ? band.first - under_lo : 0;
  int64_t take_hi = band.last + 1 - under_hi;
  for (int64_t i = 0; i < count; ++i) {
    const int32_t p = candidates[i];
    const float v = values[p];
    bool take;
    if (band.bounded && v == lo) {
      take = skip_lo-- <= 0 && n < band.size();  // the cap binds when lo == hi
    } else if (v == hi) {
      take = take_hi-- > 0;
    } else {
      take = !band.bounded || v > lo;  // v < hi
    }
    if (take) paths[n++] = p;
  }
}

}  // namespace pricer
