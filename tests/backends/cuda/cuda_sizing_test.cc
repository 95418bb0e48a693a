// The cuda backend's memory contract and the planner's sizing of cuda jobs:
// the allocation table of a job, its resident and per-shard bytes, and the
// plans they give. No case needs a GPU: sizing makes no CUDA call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "server/backends/cuda/cuda_device.h"
#include "server/backends/cuda/kernels.h"
#include "server/scheduler/engine.h"
#include "server/scheduler/shard_planner.h"
#include "tests/backends/cpu/engine_test_util.h"
#include "tests/backends/cuda/cuda_test_util.h"

namespace pricer {
namespace {

using ::testing::ElementsAreArray;

// A table's buffers as (name, elements, element bytes).
using Entry = std::tuple<std::string, int64_t, int64_t>;
std::vector<Entry> Entries(const std::vector<Buffer>& buffers) {
  std::vector<Entry> entries;
  for (const Buffer& b : buffers) entries.emplace_back(b.name, b.elements, b.element_bytes);
  return entries;
}
std::vector<Entry> Concat(std::initializer_list<std::vector<Entry>> parts) {
  std::vector<Entry> all;
  for (const std::vector<Entry>& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

// The one restatement of what a cuda job allocates (CudaJobBuffers), entry
// by entry; the other sizing cases check sums in closed form, and
// AJobAllocatesTheBuffersOfItsTableAndNoOthers (cuda_engine_test, with a GPU)
// that the job allocates just these.
TEST(CudaDeviceSizingTest, TheTableNamesEveryBufferOfAJob) {
  const CudaDevice device("cuda0", 0, kCudaBudget);
  const int64_t p = 10000, n = 500, w = 1024;
  const int64_t workspace = 32 << 20;
  const int64_t level_bytes = sizeof(cuda::OrderLevel);
  auto held = [&](int64_t levels) {
    return std::vector<Entry>{{"terminal prices ST", p * n, 4},
                              {"spot (float64)", n, 8},
                              {"order levels", levels, level_bytes},
                              {"sort offsets", 257, 4}};
  };
  const std::vector<Entry> constants = {{"spot", n, 4}, {"drift", n, 4}, {"diffusion", n, 4}};
  const std::vector<Entry> correlation = {{"independent shocks Z", p * n, 4},
                                          {"correlation factor L", n * n, 4},
                                          {"cuBLAS workspace (correlating ST)", workspace, 1}};
  const std::vector<Entry> blocks = {{"cuBLAS workspace", workspace, 1},
                                     {"scenario block A", n * w, 4},
                                     {"result block SC", p * w, 4}};
  const std::vector<Entry> sort = {{"sort keys", p * 256, 4},
                                   {"sort keys (alternate)", p * 256, 4},
                                   {"sort scratch", cuda::SortScratchBytes(p), 1}};

  JobSpec spec = SeedExampleSpec(1000);  // nine order statistics
  spec.market.correlation_factor = EqualCorrelationFactor(n, 0.3);
  const AllocationTable all = device.Allocations(spec, w);
  EXPECT_THAT(Entries(all.resident), ElementsAreArray(Concat({held(9), constants, correlation})));
  EXPECT_THAT(Entries(all.per_shard),
              ElementsAreArray(Concat({blocks, {{"statistics block", (5 + 9) * w, 8}}, sort})));

  // Independent issuers, no statistics: none of the buffers they need (an
  // empty buffer still takes one element: one order level).
  spec.market.correlation_factor.clear();
  spec.output.statistics = StatisticsSelection{};
  const AllocationTable fewest = device.Allocations(spec, w);
  EXPECT_THAT(Entries(fewest.resident), ElementsAreArray(Concat({held(0), constants})));
  EXPECT_EQ(fewest.resident[2].bytes(), level_bytes);
  EXPECT_THAT(Entries(fewest.per_shard), ElementsAreArray(blocks));
  // Moments only: the statistics block of five rows, no sort.
  spec.output.statistics = StatisticsSelection::Basic();
  EXPECT_THAT(Entries(device.Allocations(spec, w).per_shard),
              ElementsAreArray(Concat({blocks, {{"statistics block", 5 * w, 8}}})));
}

TEST(CudaDeviceSizingTest, ShardBytesAreTheBlocksTheStatisticsAndTheWorkspace) {
  const CudaDevice device("cuda0", 0, kCudaBudget);
  JobSpec spec = SeedExampleSpec(1000);
  const int64_t p = 10000, n = 500, w = 1024;
  spec.output.statistics = StatisticsSelection::Basic();
  const int64_t basic = 4 * (n + p) * w + CudaDevice::kCublasWorkspaceBytes + 8 * 5 * w;
  EXPECT_EQ(device.ShardBytes(spec, w), basic);
  // Nine order statistics: their rows, two P x 256 sort buffers and the
  // sort's scratch.
  spec.output.statistics = RiskSelection();
  EXPECT_EQ(device.ShardBytes(spec, w),
            basic + 8 * 9 * w + 2 * 4 * p * cuda::kSortColumns + cuda::SortScratchBytes(p));
  EXPECT_EQ(device.MaxShardsInFlight(), 2);
}

TEST(CudaDeviceSizingTest, ResidentBytesHoldTerminalPricesAndTheCorrelationWhileItIsBuilt) {
  const CudaDevice device("cuda0", 0, kCudaBudget);
  JobSpec spec = SeedExampleSpec(1000);
  const int64_t p = 10000, n = 500;
  const int64_t independent = device.ResidentBytes(spec);
  EXPECT_GE(independent, 4 * p * n);
  EXPECT_LT(independent, 4 * p * n + (1 << 20));
  spec.market.correlation_factor = EqualCorrelationFactor(n, 0.3);
  EXPECT_EQ(device.ResidentBytes(spec),
            independent + 4 * (p * n + n * n) + CudaDevice::kCublasWorkspaceBytes);
}

TEST(CudaDeviceSizingTest, TheSeedExampleFitsAnH200BudgetWithTwoShardsInFlight) {
  // 70 GB: the default budget (half the free memory) of a 141 GB H200.
  const int64_t budget = 70LL * 1000 * 1000 * 1000;
  std::unique_ptr<Engine> engine = MakeCudaEngine(budget);
  absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(SeedExampleSpec(1000000));
  ASSERT_TRUE(job.ok()) << job.status();
  (*job)->Cancel(absl::CancelledError("sizing only"));
  const ShardPlan& plan = (*job)->plan();
  const DevicePlan& device = (*job)->device_plans()[0];
  EXPECT_EQ(plan.shard_columns % kColumnAlignment, 0);
  EXPECT_EQ(device.shards_in_flight, 2);
  EXPECT_LE(device.resident_bytes + device.shards_in_flight * device.shard_bytes, budget);
  // Far from the 40 GB a naive plan would hold for SC.
  EXPECT_LT(device.shards_in_flight * device.shard_bytes, 1LL << 30);
}

TEST(CudaDeviceSizingTest, ShardsNarrowToFitASmallBudget) {
  JobSpec spec = SeedExampleSpec(100000);
  const CudaDevice probe("cuda0", 0, 0);
  // Room for ST and one shard of 768 columns: the planner's first choice of
  // 1792 (the 64 MiB SC target at P = 10,000) halved, rounded down to the
  // alignment.
  const int64_t budget = probe.ResidentBytes(spec) + probe.ShardBytes(spec, 768);
  std::unique_ptr<Engine> engine = MakeCudaEngine(budget);
  absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(std::move(spec));
  ASSERT_TRUE(job.ok()) << job.status();
  (*job)->Cancel(absl::CancelledError("sizing only"));
  EXPECT_EQ((*job)->plan().shard_columns, 768);
  EXPECT_EQ((*job)->device_plans()[0].shards_in_flight, 1);
}

TEST(CudaDeviceSizingTest, AJobOverTheBudgetIsRefusedBeforeAnyCudaCall) {
  std::unique_ptr<Engine> engine = MakeCudaEngine(64 << 20);
  absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(SeedExampleSpec(10000));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace pricer
