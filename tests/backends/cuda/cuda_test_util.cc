#include "tests/backends/cuda/cuda_test_util.h"

#include <gtest/gtest.h>

#include <utility>

#include "server/backends/cpu/cpu_device.h"
#include "server/backends/cuda/cuda_device.h"
#include "server/model/correlation.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {

bool HasGpu() { return CudaDeviceCount().ok(); }

std::unique_ptr<Engine> MakeCudaEngine(int64_t budget, bool with_cpu) {
  std::vector<std::unique_ptr<Device>> devices;
  devices.push_back(std::make_unique<CudaDevice>("cuda0", 0, budget));
  if (with_cpu) devices.push_back(std::make_unique<CpuDevice>("cpu0", kBudget, 2));
  return std::make_unique<Engine>(std::move(devices));
}

Market SpreadMarket(int64_t issuers) {
  Market market = MakeMarket({}, {}, 0.03, 0.75);
  for (int64_t i = 0; i < issuers; ++i) {
    market.spot.push_back(20.0 + 80.0 * static_cast<double>(i) / static_cast<double>(issuers));
    market.volatility.push_back(0.1 + 0.4 * static_cast<double>((i * 37) % issuers) /
                                          static_cast<double>(issuers));
  }
  return market;
}

std::vector<float> EqualCorrelationFactor(int64_t n, double rho) {
  std::vector<double> c(static_cast<size_t>(n * n), rho);
  for (int64_t i = 0; i < n; ++i) c[static_cast<size_t>(i * n + i)] = 1.0;
  absl::StatusOr<std::vector<float>> factor = CholeskyFactor(c, n);
  EXPECT_TRUE(factor.ok()) << factor.status();
  return factor.ok() ? *factor : std::vector<float>{};
}

StatisticsSelection RiskSelection() {
  StatisticsSelection s = StatisticsSelection::Basic();
  s.quantiles = {0.0, 0.01, 0.5, 0.99, 1.0};
  s.var = {0.95, 0.99};
  s.es = {0.975, 0.99};
  return s;
}

JobSpec SeedExampleSpec(int64_t columns) {
  const int64_t issuers = 500;
  JobSpec spec =
      MakeSpec(SpreadMarket(issuers), 10000, 1,
               ScenarioMatrix::Generated(issuers, columns, 2, 0.0f, 1.0f), OutputSelection{});
  spec.output.statistics = RiskSelection();
  return spec;
}

}  // namespace pricer
