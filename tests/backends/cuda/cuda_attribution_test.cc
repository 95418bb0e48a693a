// The cuda backend's Euler contributions and sensitivities
// (server/backends/cuda/cuda_attribution.h) against the cpu backend's, with
// a GPU (they skip without one, cuda_test_util.h).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "tests/backends/cpu/engine_test_util.h"
#include "tests/backends/cuda/cuda_test_util.h"

namespace pricer {
namespace {

// Euler contributions and their delta and vega (attribution_kernels.h), of
// a stock book on GBM paths and of a book of options on historical returns:
// the same definitions as the cpu backend's. SC's rounding differs between
// cuBLAS and OpenBLAS, which may move a path across a band's end; that
// moves a mean by about one path's weight, within two standard errors.
TEST(CudaAttributionTest, ContributionsAndSensitivitiesMatchTheCpuBackend) {
  REQUIRE_GPU();
  constexpr int64_t kIssuers = 30, kPaths = 10'000;
  JobSpec spec = MakeSpec(SpreadMarket(kIssuers), kPaths, 21,
                          ScenarioMatrix::Generated(kIssuers, 700, 5, -1.0f, 1.0f),
                          Output(/*full=*/false, /*statistics=*/true, false));
  StatisticsSelection& s = spec.output.statistics;
  s.es = s.es_contributions = {0.975};
  s.var = s.var_contributions = {0.99};
  s.delta = s.vega = s.errors = true;
  auto expect_near = [](const std::vector<std::vector<float>>& gpu,
                        const std::vector<std::vector<float>>& cpu,
                        const std::vector<std::vector<float>>& se, const char* what) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    for (size_t l = 0; l < cpu.size(); ++l) {
      ASSERT_EQ(gpu[l].size(), cpu[l].size()) << what;
      for (size_t k = 0; k < cpu[l].size(); ++k) {
        const double tolerance = 2 * se[l][k] + 1e-5 * std::abs(cpu[l][k]) + 1e-6;
        ASSERT_NEAR(gpu[l][k], cpu[l][k], tolerance) << what << " level " << l << " at " << k;
      }
    }
  };
  for (const bool book : {false, true}) {
    SCOPED_TRACE(book ? "a book on historical returns" : "stocks on GBM paths");
    if (book) {
      for (int64_t i = 0; i < kIssuers; ++i) {
        const double spot = spec.market.spot[static_cast<size_t>(i)];
        spec.instruments.push_back({i, InstrumentType::kCall, spot, 1.5, std::nullopt});
        spec.instruments.push_back({i, InstrumentType::kPut, 0.9 * spot, 1.0, 0.3});
      }
      spec.scenarios = ScenarioMatrix::Generated(2 * kIssuers, 700, 5, -1.0f, 1.0f);
      auto returns = std::make_shared<std::vector<float>>(static_cast<size_t>(kPaths * kIssuers));
      for (size_t k = 0; k < returns->size(); ++k) {
        (*returns)[k] = static_cast<float>((k * 7919) % 2001) / 5000.0f - 0.2f;
      }
      spec.returns = ScenarioMatrix::Inline(kPaths, kIssuers, std::move(returns));
    }
    const Comparison c = RunBoth(spec);
    const ColumnStatistics &g = c.gpu.statistics, &p = c.cpu.statistics;
    ExpectStatisticsNear(g, p, 1e-5);
    expect_near(g.contributions, p.contributions, p.contributions_se, "contributions");
    expect_near(g.delta, p.delta, p.delta_se, "delta");
    expect_near(g.vega, p.vega, p.vega_se, "vega");
    expect_near(g.contributions_se, p.contributions_se, p.contributions_se, "their errors");
  }
}

}  // namespace
}  // namespace pricer
