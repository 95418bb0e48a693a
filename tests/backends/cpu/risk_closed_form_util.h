// Shared pieces of the risk statistics tests of the engine with the cpu
// backend (risk_closed_form_*_test.cc): the closed forms of the lognormal
// model with their standard errors, scenario and correlation helpers, shocks
// recovered from ST, and sample moments.
//
// Tolerance rule: an estimate from P paths must lie within 4 of its
// asymptotic standard errors (SE) of the closed form, with
//   mean      SE = sd / sqrt(P)
//   stddev    SE = sd sqrt((kurtosis - 1) / (4 P)), the lognormal kurtosis
//             e^{4 s^2} + 2 e^{3 s^2} + 3 e^{2 s^2} - 3 (s = sigma sqrt(T))
//   quantile  SE = sqrt(q (1 - q) / P) / f(x_q), f the lognormal density
//   VaR_a     SE = e^{-rT} SE(quantile of level 1 - a)
//   ES_a      SE = e^{-rT} sqrt((Var(X | X <= x_b) + (1 - b) (x_b - E[X | X <= x_b])^2)
//             / (b P)) with b = 1 - a, the SE of a tail mean beyond an
//             estimated quantile (tail moments in closed form)
//   corr rho  SE = (1 - rho^2) / sqrt(P)
// The seeds are fixed, so each test is deterministic; a seed drawn at random
// would fail a 4-SE check with probability 6e-5. Float32 rounding (~1e-7
// relative) is far below every SE here.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "server/model/job_spec.h"
#include "server/model/statistics.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {

inline constexpr int64_t kPaths = 200000;
inline constexpr double kRate = 0.03, kMaturity = 1.5;
inline constexpr double kSigmas = 4.0;  // the tolerance, in standard errors

double NormalCdf(double x);
double NormalDensity(double x);
// Phi^{-1}(p) by bisection, to double precision.
double NormalQuantile(double p);

// A position of weight w in one issuer: its value at T is
// X = w S0 exp((r - sigma^2/2) T + sigma sqrt(T) Z), lognormal.
struct LognormalPosition {
  double value = 0;  // today's value w S0
  double sigma = 0;

  double s() const { return sigma * std::sqrt(kMaturity); }
  double m() const { return (kRate - 0.5 * sigma * sigma) * kMaturity; }
  double Mean() const { return value * std::exp(kRate * kMaturity); }
  double Stddev() const { return Mean() * std::sqrt(std::expm1(s() * s())); }
  double Quantile(double q) const { return value * std::exp(m() + s() * NormalQuantile(q)); }
  double VaR(double a) const {
    return value * (1 - std::exp(-0.5 * s() * s() + s() * NormalQuantile(1 - a)));
  }
  double ES(double a) const {
    return value * (1 - NormalCdf(NormalQuantile(1 - a) - s()) / (1 - a));
  }

  double MeanError() const { return Stddev() / std::sqrt(static_cast<double>(kPaths)); }
  double StddevError() const {
    const double v = s() * s();
    const double kurtosis = std::exp(4 * v) + 2 * std::exp(3 * v) + 3 * std::exp(2 * v) - 3;
    return Stddev() * std::sqrt((kurtosis - 1) / (4.0 * kPaths));
  }
  double QuantileError(double q) const {
    const double density = NormalDensity(NormalQuantile(q)) / (Quantile(q) * s());
    return std::sqrt(q * (1 - q) / kPaths) / density;
  }
  double VaRError(double a) const { return std::exp(-kRate * kMaturity) * QuantileError(1 - a); }
  double ESError(double a) const {
    const double b = 1 - a, z = NormalQuantile(b), x = Quantile(b);
    const double tail_mean = Mean() * NormalCdf(z - s()) / b;
    const double tail_square =
        value * value * std::exp(2 * m() + 2 * s() * s()) * NormalCdf(z - 2 * s()) / b;
    const double tail_variance = tail_square - tail_mean * tail_mean;
    return std::exp(-kRate * kMaturity) *
           std::sqrt((tail_variance + (1 - b) * (x - tail_mean) * (x - tail_mean)) / (b * kPaths));
  }
};

// Mean, stddev, min, max, the quantiles 5%, 50%, 95%, VaR and ES at 99% and
// 97.5%.
StatisticsSelection RiskSelection();

OutputSelection StatisticsOutput(StatisticsSelection statistics, bool full = false,
                                 bool terminal_prices = false);

// An inline N x M scenario matrix from its columns.
ScenarioMatrix InlineScenarios(int64_t issuers, const std::vector<std::vector<float>>& columns);

// Every issuer correlated `rho` with every other.
std::vector<double> Equicorrelation(int64_t n, double rho);

// The correlation factor of `correlation` (n x n) as CholeskyFactor makes
// it; empty, with a test failure, when it has none.
std::vector<float> Factor(const std::vector<double>& correlation, int64_t n);

// The shocks x[p, i] recovered from ST: (log(ST / S0) - drift) / diffusion,
// with the float32 constants the backend uses.
std::vector<double> RecoveredShocks(const JobResult& result, const Market& market, int64_t i);

double SampleMean(const std::vector<double>& x);
double SampleCorrelation(const std::vector<double>& x, const std::vector<double>& y);

// Expects mean, stddev, VaR and ES of column k to match `position`.
void ExpectLognormalRisk(const ColumnStatistics& stats, size_t k,
                         const StatisticsSelection& selection, const LognormalPosition& position);

}  // namespace pricer
