// Where a column's risk comes from (docs/risk.md, "Where the risk comes
// from"): the Euler contributions of ES and VaR to A's rows. Row r's
// contribution to column j at level a is
//   C[r, j] = -A[r, j] (exp(-r T) mean_{p in B} X[p, r] - X0[r])
// over a band B of the column's paths by rank: ES's tail (the k smallest
// PnL that ES averages, so the contributions add up to ES) or a window
// around VaR's rank (they add up to the window's mean loss, VaR's kernel
// estimate). X is ST, or a book's V; X0 its value today. This file holds
// which paths a band takes, the arithmetic every backend shares.
#pragma once

#include <cstdint>
#include <vector>

#include "server/model/host_device.h"
#include "server/model/instruments.h"
#include "server/model/statistics.h"

namespace pricer {

struct JobSpec;

// Ranks first..last (0-based, of the column's sorted values) of a band.
// `bounded` false: it starts at rank 0 and needs no lower order statistic.
struct TailBand {
  int64_t first = 0, last = 0;
  bool bounded = false;
  PRICER_HOST_DEVICE int64_t size() const { return last - first + 1; }
};

// VaR's window half-width w over `rows` paths: floor(sqrt(rows) / 2). The
// window holds about sqrt(rows) paths, so its mean's variance and the bias
// of its width (it spans about 1 / sqrt(rows) of probability) both vanish
// as the paths grow (docs/risk.md).
int64_t VarWindowHalfWidth(int64_t rows);

// ES's tail at confidence `level` over `rows` values: ranks 0..k-1, the k
// = floor((rows - 1)(1 - level)) + 1 smallest (the values ES averages).
TailBand EsTail(double level, int64_t rows);
// VaR's window at `level`: ranks low - w .. low + 1 + w around VaR's ranks
// low, low + 1 (QuantileRankOf(1 - level)), clipped to the column.
TailBand VarWindow(double level, int64_t rows);
// The bands of a selection's contributed levels, in contribution_levels()'s
// order.
std::vector<TailBand> ContributionBands(const StatisticsSelection& selection, int64_t rows);

// The paths of `values` whose ranks lie in `band`, given its order
// statistics x_(first) (`lo`, read only when bounded) and x_(last) (`hi`),
// ranked as a stable sort ranks them (tied values in path order): the
// values strictly between lo and hi and, of those tied at either end, the
// ones whose ranks fall in the band. `candidates` are the `count` paths
// whose values are <= hi, ascending (every value <= lo is among them).
// Writes band.size() path indices, ascending, to `paths`.
void BandPaths(const float* values, const int32_t* candidates, int64_t count, TailBand band,
               float lo, float hi, int32_t* paths);

// The sensitivities (docs/risk.md): the pathwise derivatives of X's rows
// with respect to their issuer's spot S0 and volatility sigma, and of X0's.
// Row r's share of the delta of column j is -A[r, j] (exp(-r T) mean_B
// dX[p, r]/dS0 - dX0[r]/dS0); an issuer's delta adds its rows' shares (the
// same for vega). A stock: dST/dS0 = ST / S0 and dST/dsigma = ST (sqrt(T) x
// - sigma T), x the path's (correlated) shock, 0 for historical returns; an
// instrument: its Black-Scholes delta at the horizon times those, plus its
// own vega when its volatility is its issuer's.

// The terms of A's rows at the horizon (`today` false) or today: the
// book's instruments, or a stock per issuer.
std::vector<InstrumentTerms> RowTerms(const JobSpec& spec, bool today);
// dX0[r]/dS0 and dX0[r]/dsigma of each row.
struct RowDerivatives {
  std::vector<double> delta, vega;
};
RowDerivatives DerivativesToday(const JobSpec& spec);

// dX[p, r]/dS0 from its issuer's ST and S0.
PRICER_HOST_DEVICE inline double PathDelta(const InstrumentTerms& t, double st, double spot) {
  return InstrumentDelta(t, st) * st / spot;
}
// dX[p, r]/dsigma from its issuer's ST and dST/dsigma.
PRICER_HOST_DEVICE inline double PathVega(const InstrumentTerms& t, double st, double dst) {
  return InstrumentDelta(t, st) * dst + (t.issuer_volatility ? InstrumentVega(t, st) : 0.0);
}
// dST/dsigma under GBM: ST (sqrt(T) x - sigma T).
PRICER_HOST_DEVICE inline double TerminalPriceVega(double st, double root_t, double sigma_t,
                                                   double x) {
  return st * (root_t * x - sigma_t);
}

}  // namespace pricer
