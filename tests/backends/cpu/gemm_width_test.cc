// The width of the cpu backend's GEMM calls (server/backends/cpu/gemm_width.h):
// the probe's verdict holds on shapes it did not try, and wide calls are
// made only for large X on kernels that passed it.
#include "server/backends/cpu/gemm_width.h"

#include <gtest/gtest.h>

#include "server/backends/cpu/blas_core.h"
#include "server/scheduler/shard_planner.h"

namespace pricer {
namespace {

TEST(GemmWidth, TheProbesVerdictHoldsOnOtherShapesAndInputs) {
  const bool merge = SgemmBlocksMergeExactly();
  // Over kWideGemmMinElements, with remainders the probe did not have.
  EXPECT_EQ(SgemmBlocksMergeExactlyAt(3001, 353, 7), merge) << LoadedBlasCore();
  EXPECT_EQ(SgemmBlocksMergeExactlyAt(1100, 1000, 8), merge) << LoadedBlasCore();
}

TEST(GemmWidth, WideCallsOnlyForALargeXOnKernelsThatMergeExactly) {
  const bool merge = SgemmBlocksMergeExactly();
  EXPECT_EQ(GemmColumns(1024, 1024), merge ? kWideGemmColumns : kColumnAlignment);
  // The original example: 10^7 flop a column, 1792 columns within 2 x 10^10.
  EXPECT_EQ(GemmColumns(10'000, 500), merge ? 1792 : kColumnAlignment);
  // A block of 2 x 10^10 flop or more: one block a call all the same.
  EXPECT_EQ(GemmColumns(10'000, 4000), kColumnAlignment);
  EXPECT_EQ(GemmColumns(10'000, 1500), merge ? 2 * kColumnAlignment : kColumnAlignment);
  EXPECT_EQ(GemmColumns(1024, 1023), kColumnAlignment);
  EXPECT_EQ(GemmColumns(4000, 50), kColumnAlignment);
  EXPECT_EQ(GemmColumns(1, 1), kColumnAlignment);
}

}  // namespace
}  // namespace pricer
