#include "tests/backends/cpu/risk_closed_form_util.h"

#include <gtest/gtest.h>

#include <memory>
#include <numbers>
#include <utility>

#include "absl/status/statusor.h"
#include "server/model/correlation.h"

namespace pricer {

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }
double NormalDensity(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
}

double NormalQuantile(double p) {
  double low = -40, high = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (low + high);
    (NormalCdf(mid) < p ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

StatisticsSelection RiskSelection() {
  StatisticsSelection s = StatisticsSelection::Basic();
  s.quantiles = {0.05, 0.5, 0.95};
  s.var = {0.99, 0.975};
  s.es = {0.99, 0.975};
  return s;
}

OutputSelection StatisticsOutput(StatisticsSelection statistics, bool full, bool terminal_prices) {
  OutputSelection output = Output(full, false, terminal_prices);
  output.statistics = std::move(statistics);
  return output;
}

ScenarioMatrix InlineScenarios(int64_t issuers, const std::vector<std::vector<float>>& columns) {
  auto values = std::make_shared<std::vector<float>>();
  for (const std::vector<float>& column : columns) {
    EXPECT_EQ(static_cast<int64_t>(column.size()), issuers);
    values->insert(values->end(), column.begin(), column.end());
  }
  return ScenarioMatrix::Inline(issuers, static_cast<int64_t>(columns.size()), values);
}

std::vector<double> Equicorrelation(int64_t n, double rho) {
  std::vector<double> c(static_cast<size_t>(n * n), rho);
  for (int64_t i = 0; i < n; ++i) c[static_cast<size_t>(i * n + i)] = 1.0;
  return c;
}

std::vector<float> Factor(const std::vector<double>& correlation, int64_t n) {
  absl::StatusOr<std::vector<float>> factor = CholeskyFactor(correlation, n);
  EXPECT_TRUE(factor.ok()) << factor.status();
  return factor.ok() ? *factor : std::vector<float>{};
}

std::vector<double> RecoveredShocks(const JobResult& result, const Market& market, int64_t i) {
  const double sigma = market.volatility[static_cast<size_t>(i)];
  const double spot = static_cast<float>(market.spot[static_cast<size_t>(i)]);
  const double drift = static_cast<float>((market.rate - 0.5 * sigma * sigma) * market.maturity);
  const double diffusion = static_cast<float>(sigma * std::sqrt(market.maturity));
  std::vector<double> x(static_cast<size_t>(result.paths));
  for (int64_t p = 0; p < result.paths; ++p) {
    x[static_cast<size_t>(p)] = (std::log(result.St(p, i) / spot) - drift) / diffusion;
  }
  return x;
}

double SampleMean(const std::vector<double>& x) {
  double sum = 0;
  for (const double v : x) sum += v;
  return sum / static_cast<double>(x.size());
}

double SampleCorrelation(const std::vector<double>& x, const std::vector<double>& y) {
  const double mx = SampleMean(x), my = SampleMean(y);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t p = 0; p < x.size(); ++p) {
    sxy += (x[p] - mx) * (y[p] - my);
    sxx += (x[p] - mx) * (x[p] - mx);
    syy += (y[p] - my) * (y[p] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

void ExpectLognormalRisk(const ColumnStatistics& stats, size_t k,
                         const StatisticsSelection& selection, const LognormalPosition& position) {
  EXPECT_NEAR(stats.mean[k], position.Mean(), kSigmas * position.MeanError()) << "mean";
  EXPECT_NEAR(stats.stddev[k], position.Stddev(), kSigmas * position.StddevError()) << "stddev";
  for (size_t l = 0; l < selection.var.size(); ++l) {
    const double a = selection.var[l];
    EXPECT_NEAR(stats.var[l][k], position.VaR(a), kSigmas * position.VaRError(a)) << "VaR " << a;
  }
  for (size_t l = 0; l < selection.es.size(); ++l) {
    const double a = selection.es[l];
    EXPECT_NEAR(stats.es[l][k], position.ES(a), kSigmas * position.ESError(a)) << "ES " << a;
  }
}

}  // namespace pricer
