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

#include "absl/strings/str_cat.h"
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

// A Hopper as a GPU host would measure one: each cuBLAS handle holds 3 MiB
// of its own.
constexpr GpuProfile kMeasuredHopper{90, 3 << 20, 700 << 20, true};

// The one restatement of what a cuda job allocates (CudaJobBuffers), entry
// by entry; the other sizing cases check sums in closed form, and
// AJobAllocatesTheBuffersOfItsTableAndNoOthers (cuda_engine_test, with a GPU)
// that the job allocates just these.
TEST(CudaDeviceSizingTest, TheTableNamesEveryBufferOfAJob) {
  const CudaDevice device("cuda0", 0, kCudaBudget, kMeasuredHopper, PinnedMemory());
  const int64_t p = 10000, n = 500, w = 1024;
  const int64_t workspace = 32 << 20, handle = 3 << 20;
  const int64_t level_bytes = sizeof(cuda::OrderLevel);
  // The sort's offsets only when the levels are sorted (not by the window).
  auto held = [&](int64_t levels, bool sorted) {
    std::vector<Entry> entries{{"terminal prices ST", p * n, 4},
                               {"values today X0 (float64)", n, 8},
                               {"order levels", levels, level_bytes}};
    if (sorted) entries.emplace_back("sort offsets", 257, 4);
    return entries;
  };
  const std::vector<Entry> constants = {{"spot", n, 4}, {"drift", n, 4}, {"diffusion", n, 4}};
  const std::vector<Entry> correlation = {{"independent shocks Z", p * n, 4},
                                          {"correlation factor L", n * n, 4},
                                          {"cuBLAS workspace (correlating ST)", workspace, 1},
                                          {"cuBLAS handle (correlating ST)", handle, 1}};
  const std::vector<Entry> blocks = {{"cuBLAS workspace", workspace, 1},
                                     {"cuBLAS handle", handle, 1},
                                     {"scenario block A", n * w, 4},
                                     {"result block SC", p * w, 4}};
  const std::vector<Entry> sort = {{"sort keys", p * 256, 4},
                                   {"sort keys (alternate)", p * 256, 4},
                                   {"sort scratch", cuda::SortScratchBytes(p), 1}};

  JobSpec spec = SeedExampleSpec(1000);  // nine order statistics
  spec.market.correlation_factor = EqualCorrelationFactor(n, 0.3);
  const AllocationTable all = device.Allocations(spec, w);
  EXPECT_THAT(Entries(all.resident),
              ElementsAreArray(Concat({held(9, true), constants, correlation})));
  EXPECT_THAT(Entries(all.per_shard),
              ElementsAreArray(Concat({blocks, {{"statistics block", (5 + 9) * w, 8}}, sort})));
  // Generated scenarios, statistics only: the statistics block is staged.
  EXPECT_THAT(Entries(all.pinned_per_shard),
              ElementsAreArray(std::vector<Entry>{{"pinned statistics block", (5 + 9) * w, 8}}));

  // Independent issuers, no statistics: none of the buffers they need (an
  // empty buffer still takes one element: one order level).
  spec.market.correlation_factor.clear();
  spec.output.statistics = StatisticsSelection{};
  const AllocationTable fewest = device.Allocations(spec, w);
  EXPECT_THAT(Entries(fewest.resident), ElementsAreArray(Concat({held(0, false), constants})));
  EXPECT_EQ(fewest.resident[2].bytes(), level_bytes);
  EXPECT_THAT(Entries(fewest.per_shard), ElementsAreArray(blocks));
  EXPECT_THAT(Entries(fewest.pinned_per_shard), ElementsAreArray(std::vector<Entry>{}));
  // Moments only: the statistics block of five rows, no sort.
  spec.output.statistics = StatisticsSelection::Basic();
  EXPECT_THAT(Entries(device.Allocations(spec, w).per_shard),
              ElementsAreArray(Concat({blocks, {{"statistics block", 5 * w, 8}}})));
  spec.output.statistics = StatisticsSelection::Basic();
  // Inline scenarios and full output: A staged in, SC staged out.
  spec.scenarios = ScenarioMatrix::Inline(n, 1000, nullptr);
  spec.output.full = true;
  EXPECT_THAT(Entries(device.Allocations(spec, w).pinned_per_shard),
              ElementsAreArray(std::vector<Entry>{{"pinned statistics block", 5 * w, 8},
                                                  {"pinned scenario block", n * w, 4},
                                                  {"pinned result block", p * w, 4}}));
}

// The tail alone (VaR 0.99, ES 0.975, with errors) at the example's P: the
// window kernel serves it, so nothing of the sort is allocated; its
// statistics rows are the fixed five, two levels, the mean's and stddev's
// errors and two per level.
TEST(CudaDeviceSizingTest, AJobTheWindowServesHoldsNoSortBuffers) {
  const CudaDevice device("cuda0", 0, kCudaBudget, kMeasuredHopper, PinnedMemory());
  const int64_t n = 500, w = 1024;
  JobSpec spec = SeedExampleSpec(1000);
  StatisticsSelection tail;
  tail.var = {0.99};
  tail.es = {0.975};
  tail.errors = true;
  spec.output.statistics = tail;
  const AllocationTable table = device.Allocations(spec, w);
  EXPECT_THAT(Entries(table.resident),
              ElementsAreArray(std::vector<Entry>{{"terminal prices ST", 10'000 * n, 4},
                                                  {"values today X0 (float64)", n, 8},
                                                  {"order levels", 2, sizeof(cuda::OrderLevel)},
                                                  {"spot", n, 4},
                                                  {"drift", n, 4},
                                                  {"diffusion", n, 4}}));
  EXPECT_EQ(table.per_shard.back().name, "statistics block");
  EXPECT_EQ(table.per_shard.back().elements, (5 + 2 + 2 + 2 * 2) * w);
  EXPECT_EQ(table.per_shard.size(), 5u);  // the handle's two, A, SC, statistics
  // With the median too the ranks are too far apart: sorted.
  spec.output.statistics.quantiles = {0.5};
  EXPECT_TRUE(device.BuffersOf(spec, w).sort.has_value());
}

// Contributions with delta and vega (and errors) at the example: X and its
// two derivatives row-major, dST/dsigma, and the small arrays the gathers
// read, resident; per shard the bands' paths (ES 0.975's 250, VaR 0.99's
// window of 102), the results (2 levels x (500 + 2 x 500) x 2 float32 a
// column) and the rows' shares; the results staged through pinned memory.
TEST(CudaDeviceSizingTest, ContributionsHoldTheirCopiesOfXAndTheirBlocks) {
  const CudaDevice device("cuda0", 0, kCudaBudget, kMeasuredHopper, PinnedMemory());
  const int64_t p = 10'000, n = 500, w = 1024;
  JobSpec spec = SeedExampleSpec(1000);
  StatisticsSelection s;
  s.var = s.var_contributions = {0.99};
  s.es = s.es_contributions = {0.975};
  s.delta = s.vega = s.errors = true;
  spec.output.statistics = s;
  const AllocationTable table = device.Allocations(spec, w);
  const std::vector<Entry> resident = Entries(table.resident);
  const std::vector<Entry> attribution(resident.end() - 10, resident.end());
  EXPECT_THAT(attribution, ElementsAreArray(std::vector<Entry>{
                               {"paths' rows of X (contributions)", p * n, 4},
                               {"paths' dX/dS0 (delta)", p * n, 4},
                               {"paths' dX/dsigma (vega)", p * n, 4},
                               {"dST/dsigma (vega)", p * n, 4},
                               {"sigma T (vega)", n, 8},
                               {"rows' terms (sensitivities)", n, sizeof(InstrumentTerms)},
                               {"rows' derivatives today (sensitivities)", 2 * n, 8},
                               {"rows by issuer (offsets)", n + 1, 4},
                               {"rows by issuer", n, 4},
                               {"spots (sensitivities)", n, 8}}));
  const std::vector<Entry> shard = Entries(table.per_shard);
  EXPECT_THAT(std::vector<Entry>(shard.end() - 3, shard.end()),
              ElementsAreArray(std::vector<Entry>{{"bands' paths block", (250 + 102) * w, 4},
                                                  {"contributions block", 6000 * w, 4},
                                                  {"sensitivity shares block", n * w, 8}}));
  EXPECT_EQ(Entries(table.pinned_per_shard).back(),
            Entry("pinned contributions block", 6000 * w, 4));
  // Historical returns: no dST/dsigma; without delta and vega, only X's copy.
  spec.returns = ScenarioMatrix::Deferred(p, n);
  EXPECT_EQ(device.BuffersOf(spec, w).attribution->dst_dsigma.elements, 0);
  spec.output.statistics.delta = spec.output.statistics.vega = false;
  const CudaJobBuffers plain = device.BuffersOf(spec, w);
  EXPECT_EQ(plain.attribution->delta_by_path.elements, 0);
  EXPECT_EQ(plain.attribution->shares.elements, 0);
  EXPECT_EQ(plain.attribution->results.elements, 2 * 500 * 2 * w);
}

// The workspace per the cuBLAS documentation for the architecture, and the
// handle's own bytes as measured, in every handle a job makes: each shard's
// and the one correlating ST.
TEST(CudaDeviceSizingTest, EachHandleHoldsTheWorkspaceOfItsArchitectureAndItsMeasuredState) {
  EXPECT_EQ(kUnmeasuredHopper.cublas_workspace_bytes(), 32 << 20);
  EXPECT_EQ((GpuProfile{100, 0, 0, true}.cublas_workspace_bytes()), 32 << 20);  // Blackwell
  EXPECT_EQ((GpuProfile{80, 0, 0, true}.cublas_workspace_bytes()), 4 << 20);    // Ampere
  JobSpec spec = SeedExampleSpec(1000);
  spec.market.correlation_factor = EqualCorrelationFactor(500, 0.3);
  const int64_t w = 1024;
  const CudaDevice hopper("cuda0", 0, kCudaBudget, kUnmeasuredHopper, PinnedMemory());
  for (const GpuProfile& gpu : {GpuProfile{80, 1 << 20, 0, true}, kMeasuredHopper}) {
    SCOPED_TRACE(gpu.compute_capability);
    const CudaDevice device("cuda0", 0, kCudaBudget, gpu, PinnedMemory());
    // Against an unmeasured Hopper (32 MiB, and one byte for a handle's
    // unmeasured state): one handle's difference per shard and in ST's.
    const int64_t handle_difference =
        gpu.cublas_workspace_bytes() + gpu.cublas_handle_bytes - (int64_t{32} << 20) - 1;
    EXPECT_EQ(device.ShardBytes(spec, w), hopper.ShardBytes(spec, w) + handle_difference);
    EXPECT_EQ(device.ResidentBytes(spec), hopper.ResidentBytes(spec) + handle_difference);
    EXPECT_EQ(device.headroom_bytes(), gpu.context_headroom_bytes);
  }
}

TEST(CudaDeviceSizingTest, ShardBytesAreTheBlocksTheStatisticsAndTheHandle) {
  const CudaDevice device("cuda0", 0, kCudaBudget, kMeasuredHopper, PinnedMemory());
  JobSpec spec = SeedExampleSpec(1000);
  const int64_t p = 10000, n = 500, w = 1024;
  spec.output.statistics = StatisticsSelection::Basic();
  const int64_t handle = kMeasuredHopper.cublas_workspace_bytes() + (3 << 20);
  const int64_t basic = 4 * (n + p) * w + handle + 8 * 5 * w;
  EXPECT_EQ(device.ShardBytes(spec, w), basic);
  // Nine order statistics: their rows, two P x 256 sort buffers and the
  // sort's scratch.
  spec.output.statistics = RiskSelection();
  EXPECT_EQ(device.ShardBytes(spec, w),
            basic + 8 * 9 * w + 2 * 4 * p * cuda::kSortColumns + cuda::SortScratchBytes(p));
  EXPECT_EQ(device.MaxShardsInFlight(), 2);
}

TEST(CudaDeviceSizingTest, ResidentBytesHoldTerminalPricesAndTheCorrelationWhileItIsBuilt) {
  const CudaDevice device("cuda0", 0, kCudaBudget, kMeasuredHopper, PinnedMemory());
  JobSpec spec = SeedExampleSpec(1000);
  const int64_t p = 10000, n = 500;
  const int64_t independent = device.ResidentBytes(spec);
  EXPECT_GE(independent, 4 * p * n);
  EXPECT_LT(independent, 4 * p * n + (1 << 20));
  spec.market.correlation_factor = EqualCorrelationFactor(n, 0.3);
  EXPECT_EQ(device.ResidentBytes(spec), independent + 4 * (p * n + n * n) +
                                            kMeasuredHopper.cublas_workspace_bytes() + (3 << 20));
}

TEST(CudaDeviceSizingTest, TheSeedExampleFitsAnH200BudgetWithTwoShardsInFlight) {
  // 70 GB: the default budget (half the free memory) of a 141 GB H200.
  const int64_t budget = 70LL * 1000 * 1000 * 1000;
  std::unique_ptr<Engine> engine = MakeSizingEngine(budget);
  absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(SeedExampleSpec(1000000));
  ASSERT_TRUE(job.ok()) << job.status();
  (*job)->Cancel(absl::CancelledError("sizing only"));
  const ShardPlan& plan = (*job)->plan();
  const DevicePlan& device = (*job)->device_plans()[0];
  // Statistics only: shards of the GPU's 512 MiB of SC (13,422 columns at P
  // = 10,000, rounded up to the alignment), 74 of them, not the cpu's 559.
  EXPECT_EQ(plan.shard_columns, 13568);
  EXPECT_EQ(plan.shard_count, 74);
  EXPECT_EQ(device.shards_in_flight, 2);
  EXPECT_LE(device.resident_bytes + device.shards_in_flight * device.shard_bytes, budget);
  // Far from the 40 GB a naive plan would hold for SC.
  EXPECT_LT(device.shards_in_flight * device.shard_bytes, 2LL << 30);
  // Full output streams each shard through host memory: the 64 MiB shard.
  // (A fresh engine: without a GPU the first job's start loses the device.)
  JobSpec full = SeedExampleSpec(1000000);
  full.output.full = true;
  std::unique_ptr<Engine> fresh = MakeSizingEngine(budget);
  absl::StatusOr<std::shared_ptr<Job>> streamed = fresh->Submit(std::move(full));
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  (*streamed)->Cancel(absl::CancelledError("sizing only"));
  EXPECT_EQ((*streamed)->plan().shard_columns, 1792);
}

TEST(CudaDeviceSizingTest, ShardsNarrowToFitASmallBudget) {
  JobSpec spec = SeedExampleSpec(100000);
  const CudaDevice probe("cuda0", 0, 0, kUnmeasuredHopper, PinnedMemory());
  // Room for ST and one shard of 768 columns: the planner's first choice of
  // 1792 (the 64 MiB SC target at P = 10,000) halved, rounded down to the
  // alignment.
  const int64_t budget = probe.ResidentBytes(spec) + probe.ShardBytes(spec, 768);
  std::unique_ptr<Engine> engine = MakeSizingEngine(budget);
  absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(std::move(spec));
  ASSERT_TRUE(job.ok()) << job.status();
  (*job)->Cancel(absl::CancelledError("sizing only"));
  EXPECT_EQ((*job)->plan().shard_columns, 768);
  EXPECT_EQ((*job)->device_plans()[0].shards_in_flight, 1);
}

TEST(CudaDeviceSizingTest, AJobOverTheBudgetIsRefusedBeforeAnyCudaCall) {
  std::unique_ptr<Engine> engine = MakeSizingEngine(64 << 20);
  absl::StatusOr<std::shared_ptr<Job>> job = engine->Submit(SeedExampleSpec(10000));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted);
}

// A shard stages through pinned host memory: one whose staging exceeds the
// host's bound is refused before any CUDA call, naming the bytes and the
// flag; within the bound the same job is admitted.
TEST(CudaDeviceSizingTest, AShardWhoseStagingExceedsThePinnedBoundIsRefused) {
  JobSpec spec = SeedExampleSpec(10000);
  spec.output.full = true;  // P x w floats staged per shard
  const CudaDevice probe("cuda0", 0, 0, kUnmeasuredHopper, PinnedMemory());
  const int64_t width = PlanShards(spec).shard_columns;
  const int64_t staging = probe.Allocations(spec, width).pinned_shard_bytes();
  ASSERT_GE(staging, 4 * 10000 * width);

  std::unique_ptr<Engine> small = MakeSizingEngine(kCudaBudget, staging - 1);
  absl::StatusOr<std::shared_ptr<Job>> refused = small->Submit(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::AllOf(::testing::HasSubstr(absl::StrCat(staging, " bytes of pinned")),
                               ::testing::HasSubstr("cuda0"),
                               ::testing::HasSubstr(absl::StrCat(staging - 1, " bytes")),
                               ::testing::HasSubstr("--pinned-memory")));
  EXPECT_EQ(small->CheckFits(spec).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(small->Status().pinned_budget_bytes, staging - 1);

  std::unique_ptr<Engine> enough = MakeSizingEngine(kCudaBudget, staging);
  absl::StatusOr<std::shared_ptr<Job>> admitted = enough->Submit(spec);
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  (*admitted)->Cancel(absl::CancelledError("sizing only"));
  EXPECT_EQ((*admitted)->pinned_shard_bytes()[0], staging);
}

}  // namespace
}  // namespace pricer
