#include "tests/backends/cuda/cuda_test_util.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>

#include "server/backends/cpu/cpu_device.h"
#include "server/backends/cuda/cuda_device.h"
#include "server/model/correlation.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {

bool HasGpu() { return CudaDeviceCount().ok(); }

std::shared_ptr<MemoryAccount> PinnedMemory(int64_t bytes) {
  return std::make_shared<MemoryAccount>(bytes);
}

std::unique_ptr<CudaDevice> MakeTestCudaDevice(int64_t budget,
                                               std::shared_ptr<MemoryAccount> pinned) {
  if (HasGpu()) {
    absl::StatusOr<std::unique_ptr<CudaDevice>> made = MakeCudaDevice(0, budget, 0, pinned);
    EXPECT_TRUE(made.ok()) << made.status();
    if (made.ok()) {
      EXPECT_EQ((*made)->memory().budget(), budget) << "less free on the GPU than the test needs";
      return std::move(*made);
    }
  }
  return std::make_unique<CudaDevice>("cuda0", 0, budget, kUnmeasuredHopper, std::move(pinned));
}

namespace {

std::unique_ptr<Engine> EngineOf(std::unique_ptr<CudaDevice> cuda, bool with_cpu,
                                 std::shared_ptr<MemoryAccount> pinned) {
  EngineOptions options;
  options.pinned_memory = std::move(pinned);
  std::vector<std::unique_ptr<Device>> devices;
  devices.push_back(std::move(cuda));
  if (with_cpu) devices.push_back(std::make_unique<CpuDevice>("cpu0", kBudget, 2));
  return std::make_unique<Engine>(std::move(devices), options);
}

}  // namespace

std::unique_ptr<Engine> MakeCudaEngine(int64_t budget, bool with_cpu, int64_t pinned_bytes) {
  std::shared_ptr<MemoryAccount> pinned = PinnedMemory(pinned_bytes);
  return EngineOf(MakeTestCudaDevice(budget, pinned), with_cpu, pinned);
}

std::unique_ptr<Engine> MakeSizingEngine(int64_t budget, int64_t pinned_bytes) {
  std::shared_ptr<MemoryAccount> pinned = PinnedMemory(pinned_bytes);
  return EngineOf(std::make_unique<CudaDevice>("cuda0", 0, budget, kUnmeasuredHopper, pinned),
                  false, pinned);
}

namespace {

int64_t GpuFreeBytes() {
  size_t free = 0, total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  return static_cast<int64_t>(free);
}

}  // namespace

GpuMemoryWatch::GpuMemoryWatch() {
  EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
  baseline_free_ = GpuFreeBytes();
  lowest_free_ = baseline_free_;
  poller_ = std::thread([this] {
    // The runtime's current device is per thread.
    cudaSetDevice(0);
    while (!stop_.load()) {
      const int64_t free = GpuFreeBytes();
      int64_t lowest = lowest_free_.load();
      while (free < lowest && !lowest_free_.compare_exchange_weak(lowest, free)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
}

int64_t GpuMemoryWatch::Stop() {
  if (poller_.joinable()) {
    stop_ = true;
    poller_.join();
  }
  return baseline_free_ - lowest_free_.load();
}

void ExpectGpuUseWithinBudget(const Engine& engine, int64_t gpu_used) {
  const DeviceStatus cuda = engine.DeviceStatuses()[0];
  EXPECT_LE(cuda.peak_bytes, cuda.memory_budget_bytes);
  EXPECT_LE(gpu_used, cuda.memory_budget_bytes + cuda.headroom_bytes)
      << "the GPU reports " << gpu_used << " bytes in use above the test's baseline; the engine's "
      << "peak was " << cuda.peak_bytes << " of a budget of " << cuda.memory_budget_bytes
      << " with a measured headroom of " << cuda.headroom_bytes;
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

// max_k |a_k - b_k| / max_k |b_k| over a column.
double ColumnError(const std::vector<float>& a, const std::vector<float>& b) {
  double difference = 0, scale = 0;
  for (size_t k = 0; k < b.size(); ++k) {
    difference = std::max(difference, std::abs(static_cast<double>(a[k]) - b[k]));
    scale = std::max(scale, std::abs(static_cast<double>(b[k])));
  }
  return difference / scale;
}

// Each statistic of `gpu` against `cpu`: within `relative` of the value, or
// for VaR and ES (differences of V0 and a discounted statistic) of V0.
void ExpectStatisticsNear(const ColumnStatistics& gpu, const ColumnStatistics& cpu,
                          double relative) {
  ASSERT_EQ(gpu.columns(), cpu.columns());
  for (int64_t j = 0; j < cpu.columns(); ++j) {
    const double v0 = std::abs(cpu.v0[j]);
    EXPECT_NEAR(gpu.v0[j], cpu.v0[j], 1e-12 * v0) << "v0 of column " << j;
    auto near = [&](const std::vector<double>& g, const std::vector<double>& c, double scale,
                    const char* what) {
      if (c.empty()) return;
      EXPECT_NEAR(g[j], c[j], relative * scale) << what << " of column " << j;
    };
    near(gpu.mean, cpu.mean, std::abs(cpu.mean[j]), "mean");
    near(gpu.stddev, cpu.stddev, std::abs(cpu.mean[j]), "stddev");
    near(gpu.min, cpu.min, std::abs(cpu.mean[j]), "min");
    near(gpu.max, cpu.max, std::abs(cpu.mean[j]), "max");
    for (size_t l = 0; l < cpu.quantiles.size(); ++l) {
      near(gpu.quantiles[l], cpu.quantiles[l], std::abs(cpu.mean[j]), "quantile");
    }
    for (size_t l = 0; l < cpu.var.size(); ++l) near(gpu.var[l], cpu.var[l], v0, "VaR");
    for (size_t l = 0; l < cpu.es.size(); ++l) near(gpu.es[l], cpu.es[l], v0, "ES");
  }
}

Comparison RunBoth(const JobSpec& spec) {
  Comparison c;
  std::unique_ptr<Engine> gpu = MakeCudaEngine();
  GpuMemoryWatch watch;
  c.gpu = RunJob(*gpu, spec);
  EXPECT_TRUE(c.gpu.status.ok()) << c.gpu.status;
  ExpectGpuUseWithinBudget(*gpu, watch.Stop());
  std::unique_ptr<Engine> cpu = MakeEngine();
  c.cpu = RunJob(*cpu, spec);
  EXPECT_TRUE(c.cpu.status.ok()) << c.cpu.status;
  return c;
}

}  // namespace pricer
