// How many columns of SC one sgemm call of the cpu backend may take.
//
// Every column of SC must have the same bits whatever the shard it falls in
// (its width, its column range, the device): the tests compare results
// bitwise across budgets and devices. OpenBLAS's rounding may depend on the
// shape of a call, so the backend multiplies each aligned block of
// kColumnAlignment (256) columns in a call of its own, and a block's shape
// depends only on the job. But each call packs the whole of X (P x R) again:
// at the original example (X 20 MB), on AVX-512 kernels, that copy
// (sgemm_itcopy) took 8.7% of the server's time (perf, issue 28), where one
// bare call over all columns packs X once per few thousand columns.
//
// Some kernel sets compute each column of C with the same operations
// whatever the call's width (Sandybridge, SkylakeX, Cooperlake); others do
// not (Haswell and Zen round columns differently in calls of 256 and 512
// columns). Which one the process runs is known only once OpenBLAS has
// loaded, so a probe decides: a few products computed block by block and in
// wider calls over the same aligned blocks, compared bit for bit. Where
// they agree, the backend multiplies up to kWideGemmColumns columns (eight
// aligned blocks, at most kWideGemmFlops a call) in one call; elsewhere one
// block per call, as before. At the original example on Cooperlake kernels:
// GEMM thread-seconds 8.6 with one block a call, 7.2 with four, 6.8 with
// eight (a server, 100,000 columns, stats mode).
//
// Small products may take another path in OpenBLAS (0.3.21's SkylakeX
// "small matrix" kernels, for M N K up to about 10^6), whose rounding
// differs with the width; wide calls are made only where X has at least
// kWideGemmMinElements elements, so that every call, however narrow, is of
// a size that those paths do not take, and the probe's products are of that
// size too.
#pragma once

#include <cstdint>

namespace pricer {

inline constexpr int64_t kWideGemmColumns = 2048;
// The flops of one wide call, which polls nothing: 0.15 s on a core of
// AVX-512 kernels (140+ GFLOP/s).
inline constexpr double kWideGemmFlops = 2e10;
inline constexpr int64_t kWideGemmMinElements = int64_t{1} << 20;

// Whether block-by-block and wide calls gave the same bits in this
// process's probe: run once, on the first call (the first job large enough
// to use it; logged), with OpenBLAS single threaded (as the backend runs
// it); about 2.7 x 10^10 flop: 0.26 s on Cooperlake kernels, 0.12 s on
// Haswell's, whose first comparison already differs (gemm_width_test's
// second test, which runs it, on the Emerald Rapids VM).
bool SgemmBlocksMergeExactly();

// The most columns of one call for a job whose GEMMs take `rows_per_gemm`
// rows of X (P, or its fixed split) and `rows` columns of it (N issuers, or
// K instruments): where SgemmBlocksMergeExactly() and rows_per_gemm x rows
// >= kWideGemmMinElements, the most aligned blocks up to kWideGemmColumns
// whose GEMM is within kWideGemmFlops; else kColumnAlignment.
int64_t GemmColumns(int64_t rows_per_gemm, int64_t rows);

// For tests: whether sgemm gives the same bits for an m x k times k x n
// product of n = 2118 columns (eight aligned blocks and a partial last one
// of 70) computed block by block and in the wider calls a shard may make
// (all of it; all but the first block). Random inputs from `seed`.
bool SgemmBlocksMergeExactlyAt(int64_t m, int64_t k, uint64_t seed);

}  // namespace pricer
