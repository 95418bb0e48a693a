// The cuda backend's window kernel (LaunchWindowOrderStatistics) on columns
// made on the host, against a full sort: at the original example's P =
// 10,000 and at odd P, and on columns whose sample misjudges them (the
// retry, and the bisection over the whole column). Where the kernel applies
// (WindowApplies) is checked everywhere; the kernel itself needs a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "server/backends/cuda/cuda_job.h"
#include "server/backends/cuda/kernels.h"
#include "server/model/interval_ranks.h"
#include "server/model/order_window.h"
#include "server/model/statistic_errors.h"
#include "server/model/statistics.h"
#include "tests/backends/cuda/cuda_test_util.h"
#include "tests/model/statistics_reference.h"

namespace pricer {
namespace {

const double kDiscount = std::exp(-0.02 * 1.5);
constexpr double kV0 = 1'000;

StatisticsSelection Tail() {
  StatisticsSelection s;
  s.quantiles = {0.01, 0.02};
  s.var = {0.99};
  s.es = {0.975, 0.99};
  return s;
}

TEST(WindowAppliesTest, TheExamplesTailsUpToAboutThirtyEightThousandPaths) {
  EXPECT_TRUE(cuda::WindowApplies(NeededSpan(Tail(), 10'000), 10'000));
  EXPECT_TRUE(cuda::WindowApplies(NeededSpan(Tail(), 10'001), 10'001));
  EXPECT_TRUE(cuda::WindowApplies(NeededSpan(Tail(), 30'000), 30'000));
  // The window would overflow shared memory: the columns are sorted.
  EXPECT_FALSE(cuda::WindowApplies(NeededSpan(Tail(), 60'000), 60'000));
  // Too short for a sample, or ranks far apart.
  EXPECT_FALSE(cuda::WindowApplies(NeededSpan(Tail(), 2'000), 2'000));
  StatisticsSelection wide = Tail();
  wide.quantiles.push_back(0.5);
  EXPECT_FALSE(cuda::WindowApplies(NeededSpan(wide, 10'000), 10'000));
}

template <typename T>
T* ToDevice(const std::vector<T>& host) {
  void* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, host.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
            cudaSuccess);
  return static_cast<T*>(device);
}

// The levels' errors of `columns` as the cpu's ColumnErrors computes them
// from the same values, against the kernel's error rows `rows` (ErrorArgs):
// the interval bounds the same order statistics (the ranks come from
// integer counts on both sides), the ES standard errors equal but for the
// order of their sums.
void ExpectErrorsMatchTheCpu(const std::vector<std::vector<float>>& columns,
                             const StatisticsSelection& selection, bool antithetic,
                             const std::vector<double>& rows) {
  const int64_t count = static_cast<int64_t>(columns.size());
  const int64_t paths = static_cast<int64_t>(columns[0].size());
  ColumnStatistics cpu;
  cpu.Resize(selection, count);
  std::fill(cpu.v0.begin(), cpu.v0.end(), kV0);
  ColumnErrors errors(selection, paths, kDiscount, antithetic);
  for (int64_t j = 0; j < count; ++j) errors.Compute(columns[j].data(), j, &cpu);
  auto row = [&](size_t r, int64_t j) { return rows[r * static_cast<size_t>(count) + j]; };
  for (int64_t j = 0; j < count; ++j) {
    size_t r = 0;
    for (size_t l = 0; l < selection.quantiles.size(); ++l, r += 2) {
      EXPECT_EQ(row(r, j), cpu.quantiles_lo[l][j]) << "quantile lower, column " << j;
      EXPECT_EQ(row(r + 1, j), cpu.quantiles_hi[l][j]) << "quantile upper, column " << j;
    }
    for (size_t l = 0; l < selection.var.size(); ++l, r += 2) {
      EXPECT_EQ(row(r, j), cpu.var_lo[l][j]) << "VaR lower, column " << j;
      EXPECT_EQ(row(r + 1, j), cpu.var_hi[l][j]) << "VaR upper, column " << j;
    }
    for (size_t l = 0; l < selection.es.size(); ++l, r += 2) {
      EXPECT_NEAR(row(r, j), cpu.es_se[l][j], 1e-9 * cpu.es_se[l][j]) << "ES se, column " << j;
    }
  }
}

// Runs the kernel over `columns` (each `paths` long) and checks every level
// of every column against a full sort, and with `errors` their errors
// against the cpu's.
void ExpectKernelMatchesSort(const std::vector<std::vector<float>>& columns, int64_t paths,
                             bool errors = false, bool antithetic = false) {
  StatisticsSelection selection = Tail();
  selection.errors = errors;
  const std::vector<cuda::OrderLevel> levels = OrderLevels(selection, paths);
  const int64_t count = static_cast<int64_t>(columns.size());
  const size_t rows = levels.size() * static_cast<size_t>(count);
  std::vector<float> sc;
  for (const std::vector<float>& c : columns) sc.insert(sc.end(), c.begin(), c.end());
  const std::vector<double> v0(static_cast<size_t>(count), kV0);
  std::vector<double> out(rows, -1), error_rows(2 * rows, -1);
  float* sc_device = ToDevice(sc);
  cuda::OrderLevel* levels_device = ToDevice(levels);
  double* v0_device = ToDevice(v0);
  double* out_device = ToDevice(out);
  double* errors_device = ToDevice(error_rows);
  cuda::ErrorArgs args;
  if (errors) {
    args = {errors_device, ColumnErrors::NormalQuantile(selection.error_confidence), antithetic};
  }
  const RankSpan span = WindowSpan(selection, paths, antithetic);
  ASSERT_TRUE(cuda::WindowApplies(span, paths));
  ASSERT_EQ(cuda::LaunchWindowOrderStatistics(sc_device, paths, count, span, levels_device,
                                              static_cast<int>(levels.size()), v0_device, kDiscount,
                                              out_device, count, args, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), out_device, out.size() * sizeof(double), cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(error_rows.data(), errors_device, error_rows.size() * sizeof(double),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (void* p : {static_cast<void*>(sc_device), static_cast<void*>(levels_device),
                  static_cast<void*>(v0_device), static_cast<void*>(out_device),
                  static_cast<void*>(errors_device)}) {
    cudaFree(p);
  }
  if (errors) ExpectErrorsMatchTheCpu(columns, selection, antithetic, error_rows);
  for (int64_t j = 0; j < count; ++j) {
    std::vector<float> sorted = columns[static_cast<size_t>(j)];
    std::sort(sorted.begin(), sorted.end());
    size_t l = 0;
    auto at = [&](size_t level) { return out[level * static_cast<size_t>(count) + j]; };
    for (double q : selection.quantiles) EXPECT_EQ(at(l++), ReferenceQuantile(sorted, q)) << j;
    for (double a : selection.var) {
      EXPECT_EQ(at(l++), kV0 - kDiscount * ReferenceQuantile(sorted, 1 - a)) << j;
    }
    for (double a : selection.es) {
      const double tail = ReferenceTailMean(sorted, 1 - a);
      EXPECT_NEAR(at(l++), kV0 - kDiscount * tail, 1e-12 * kV0) << j;
    }
  }
}

TEST(CudaWindowKernelTest, MatchesAFullSortAtTheExamplesPathsAndOddOnes) {
  REQUIRE_GPU();
  for (int64_t paths : {10'000, 9'999, 10'001, 4'097}) {
    std::vector<std::vector<float>> columns;
    for (int c = 0; c < 300; ++c) columns.push_back(LognormalColumn(paths, 1'000 * paths + c));
    ExpectKernelMatchesSort(columns, paths);
  }
}

TEST(CudaWindowKernelTest, ColumnsWhoseSampleMisjudgesThemFallBackExactly) {
  REQUIRE_GPU();
  // Beside ordinary columns: one the retry covers (30 of its sample are its
  // 30 smallest), one that both attempts miss (its sample is its 256
  // smallest: the bisection), one of ties only, one with values tied at the
  // ES levels' quantiles (ES's tail keeps its size).
  std::vector<float> tied = LognormalColumn(10'000, 5);
  for (double a : Tail().es) tied = TiedAtTheQuantile(tied, 1 - a);
  std::vector<std::vector<float>> columns = {
      LognormalColumn(10'000, 1),
      SmallestFirst(LognormalColumn(10'000, 2), 30),
      SmallestFirst(LognormalColumn(10'000, 3), kWindowSample),
      LognormalColumn(10'000, 4),
      std::vector<float>(10'000, 42.5f),
      tied};
  ExpectKernelMatchesSort(columns, 10'000);
}

// The errors from the window: the interval bounds' ranks read from it, or
// selected from the whole column when a column's sample misjudged it or its
// ties widen the interval past the window (the column of ties); with and
// without antithetic pairs, at the example's P and odd P.
TEST(CudaWindowKernelTest, ErrorsMatchTheCpusColumnErrors) {
  REQUIRE_GPU();
  for (int64_t paths : {10'000, 10'001}) {
    for (bool antithetic : {false, true}) {
      SCOPED_TRACE(testing::Message() << paths << " paths, antithetic " << antithetic);
      std::vector<std::vector<float>> columns;
      for (int c = 0; c < 100; ++c) columns.push_back(LognormalColumn(paths, 7 * paths + c));
      columns.push_back(SmallestFirst(LognormalColumn(paths, 2), kWindowSample));
      columns.push_back(std::vector<float>(static_cast<size_t>(paths), 42.5f));
      ExpectKernelMatchesSort(columns, paths, /*errors=*/true, antithetic);
    }
  }
}

}  // namespace
}  // namespace pricer
