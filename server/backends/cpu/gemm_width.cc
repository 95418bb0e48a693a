#include "server/backends/cpu/gemm_width.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "server/backends/cpu/blas_core.h"
#include "server/scheduler/shard_planner.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

// C (m x n, column-major) = X B, one call per run of `per_call` aligned
// blocks of columns from column `first` on (the columns before it are not
// computed), the last call taking what is left.
void Multiply(const std::vector<float>& x, const std::vector<float>& b, int64_t m, int64_t k,
              int64_t n, int64_t first, int64_t per_call, std::vector<float>& c) {
  for (int64_t begin = first; begin < n; begin += per_call * kColumnAlignment) {
    const int64_t count = std::min(per_call * kColumnAlignment, n - begin);
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(count), static_cast<blasint>(k), 1.0f, x.data(),
                static_cast<blasint>(m), b.data() + begin * k, static_cast<blasint>(k), 0.0f,
                c.data() + begin * m, static_cast<blasint>(m));
  }
}

bool SameFrom(const std::vector<float>& a, const std::vector<float>& b, int64_t offset) {
  return std::memcmp(a.data() + offset, b.data() + offset,
                     (a.size() - static_cast<size_t>(offset)) * sizeof(float)) == 0;
}

}  // namespace

bool SgemmBlocksMergeExactlyAt(int64_t m, int64_t k, uint64_t seed) {
  constexpr int64_t n = kWideGemmColumns + 70;
  constexpr int64_t wide_blocks = kWideGemmColumns / kColumnAlignment;
  std::mt19937_64 rng(seed);
  // Values like the backend's: terminal prices around 5-10, positions in [0, 1).
  std::uniform_real_distribution<float> price(5.0f, 10.0f), position(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (float& v : x) v = price(rng);
  for (float& v : b) v = position(rng);
  std::vector<float> blocks(static_cast<size_t>(m * n)), wide(blocks.size());
  Multiply(x, b, m, k, n, 0, 1, blocks);
  Multiply(x, b, m, k, n, 0, wide_blocks, wide);
  if (!SameFrom(blocks, wide, 0)) return false;
  Multiply(x, b, m, k, n, kColumnAlignment, wide_blocks, wide);
  return SameFrom(blocks, wide, kColumnAlignment * m);
}

bool SgemmBlocksMergeExactly() {
  static std::once_flag once;
  static bool merge = false;
  std::call_once(once, [] {
    // As the backend runs it: partitions of a threaded call would round as
    // their own shapes do.
    openblas_set_num_threads(1);
    // Both over kWideGemmMinElements: one with K past OpenBLAS's K block (a
    // few hundred), one tall with M past its M block.
    merge = SgemmBlocksMergeExactlyAt(1013, 1039, 1) && SgemmBlocksMergeExactlyAt(8209, 131, 2);
    spdlog::info("cpu GEMMs: {} ({} kernels {} calls of several aligned blocks)",
                 merge ? "up to " + std::to_string(kWideGemmColumns) + " columns a call"
                       : "one block of " + std::to_string(kColumnAlignment) + " columns a call",
                 LoadedBlasCore(), merge ? "give the same bits in" : "round differently in");
  });
  return merge;
}

int64_t GemmColumns(int64_t rows_per_gemm, int64_t rows) {
  if (rows_per_gemm * rows < kWideGemmMinElements || !SgemmBlocksMergeExactly()) {
    return kColumnAlignment;
  }
  const double block_flops = 2.0 * static_cast<double>(rows_per_gemm) * static_cast<double>(rows) *
                             static_cast<double>(kColumnAlignment);
  const auto blocks = static_cast<int64_t>(kWideGemmFlops / block_flops);
  return std::clamp<int64_t>(blocks, 1, kWideGemmColumns / kColumnAlignment) * kColumnAlignment;
}

}  // namespace pricer
