// What the cuda tests share: a cuda engine, and the markets and jobs they
// size or price (tests/backends/cpu/engine_test_util.h for the rest).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "server/backends/cuda/cuda_device.h"
#include "server/model/job_spec.h"
#include "server/model/statistics.h"
#include "server/scheduler/engine.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {

inline constexpr int64_t kCudaBudget = int64_t{2} << 30;
// The host's pinned memory in the tests' engines.
inline constexpr int64_t kCudaPinnedBudget = int64_t{1} << 30;

// Whether this host has a GPU that the CUDA runtime can use.
bool HasGpu();

// Skips a case that needs a GPU on a host without one, unless
// PRICER_REQUIRE_GPU is set (scripts/gpu-check.sh), where that is a failure.
#define REQUIRE_GPU()                                                             \
  do {                                                                            \
    if (!HasGpu()) {                                                              \
      if (std::getenv("PRICER_REQUIRE_GPU") != nullptr) {                         \
        FAIL() << "PRICER_REQUIRE_GPU is set but " << CudaDeviceCount().status(); \
      }                                                                           \
      GTEST_SKIP() << "no GPU: " << CudaDeviceCount().status();                   \
    }                                                                             \
  } while (false)

// A pinned memory account of `bytes`, as pricerd makes from --pinned-memory.
std::shared_ptr<MemoryAccount> PinnedMemory(int64_t bytes = kCudaPinnedBudget);

// cuda0 (GPU 0) with `budget`, staging through `pinned`. With a GPU it is
// made as pricerd makes it (MakeCudaDevice: its profile measured, expected
// to leave the budget as asked); without one it is an unmeasured Hopper.
std::unique_ptr<CudaDevice> MakeTestCudaDevice(int64_t budget,
                                               std::shared_ptr<MemoryAccount> pinned);

// An engine of MakeTestCudaDevice(budget), and cpu0 after it when
// `with_cpu`, with `pinned_bytes` of pinned memory.
std::unique_ptr<Engine> MakeCudaEngine(int64_t budget = kCudaBudget, bool with_cpu = false,
                                       int64_t pinned_bytes = kCudaPinnedBudget);

// An engine of one unmeasured Hopper (kUnmeasuredHopper), GPU or not: what
// the sizing tests plan on.
std::unique_ptr<Engine> MakeSizingEngine(int64_t budget, int64_t pinned_bytes = kCudaPinnedBudget);

// The most device memory GPU 0 had in use, above what it had when the
// watch began, polled (cudaMemGetInfo) on a thread until Stop: what the GPU
// reports, whatever the engine counts.
class GpuMemoryWatch {
 public:
  GpuMemoryWatch();
  GpuMemoryWatch(const GpuMemoryWatch&) = delete;
  GpuMemoryWatch& operator=(const GpuMemoryWatch&) = delete;
  ~GpuMemoryWatch() { Stop(); }

  // The peak above the baseline, bytes.
  int64_t Stop();

 private:
  int64_t baseline_free_ = 0;
  std::atomic<int64_t> lowest_free_{0};
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

// Expects `gpu_used` (a GpuMemoryWatch's peak) within cuda0's budget plus
// the headroom measured when the device was made, and the engine's peak
// within the budget.
void ExpectGpuUseWithinBudget(const Engine& engine, int64_t gpu_used);

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

// max_k |a_k - b_k| / max_k |b_k| over a column.
double ColumnError(const std::vector<float>& a, const std::vector<float>& b);

// Each statistic of `gpu` against `cpu`: within `relative` of the value, or
// for VaR and ES (differences of V0 and a discounted statistic) of V0.
void ExpectStatisticsNear(const ColumnStatistics& gpu, const ColumnStatistics& cpu,
                          double relative);

// One request priced by a cuda engine (its GPU memory within the budget)
// and by a cpu engine.
struct Comparison {
  JobResult gpu, cpu;
};
Comparison RunBoth(const JobSpec& spec);

}  // namespace pricer
