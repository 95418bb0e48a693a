// What the cuda tests share: a cuda engine, and the markets and jobs they
// size or price (tests/backends/cpu/engine_test_util.h for the rest).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "server/model/job_spec.h"
#include "server/model/statistics.h"
#include "server/scheduler/engine.h"

namespace pricer {

inline constexpr int64_t kCudaBudget = int64_t{2} << 30;

// Whether this host has a GPU that the CUDA runtime can use.
bool HasGpu();

// One cuda device, cuda0 (GPU 0) with `budget`, and cpu0 after it when
// `with_cpu`.
std::unique_ptr<Engine> MakeCudaEngine(int64_t budget = kCudaBudget, bool with_cpu = false);

// `issuers` issuers with spots in [20, 100) and volatilities in [0.1, 0.5).
Market SpreadMarket(int64_t issuers);

// An exchangeable correlation of `rho` between all issuers.
std::vector<float> EqualCorrelationFactor(int64_t n, double rho);

// The basic statistics, five quantiles, two VaR and two ES levels: nine
// order statistics.
StatisticsSelection RiskSelection();

// The original example (500 issuers x 10,000 paths) with `columns`
// generated scenario columns and RiskSelection().
JobSpec SeedExampleSpec(int64_t columns);

}  // namespace pricer
