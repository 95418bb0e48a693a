// Exact order statistics of a few hundred floats, the cpu reducer's
// selection (server/backends/cpu/column_reducer.h): a few ranks of a
// column's window, and the window's bounds from the column's sample. A
// quickselect for several ranks at once whose partitions are vector
// compresses (AVX-512's vcompressps, AVX2's lane permutation, or portable
// vector code, chosen at run time like the column pass): each step splits
// the values around a pivot from a sample of 16 into those under it, those
// equal to it and those over it, branch-free, and goes on only where a
// wanted rank lies; a few dozen values are left to a rank count. Every
// kernel returns the same values, the exact order statistics.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "server/backends/cpu/column_pass.h"

namespace pricer {

class OrderSelect {
 public:
  // Past `depth_limit` partitions of one range (pivots that an adversarial
  // order of values could defeat every time), the range is sorted instead.
  static constexpr int kDepthLimit = 48;
  explicit OrderSelect(ReducerKernel kernel = ReducerKernel::kBest, int depth_limit = kDepthLimit);

  // Sets out[i] to the value of rank ranks[i] - first (0-based, of
  // values[0, n) sorted ascending); `ranks` ascending, each in [first, first
  // + n) (first: the values ranked under these, such as those under a
  // column's window). `values` is left as it is.
  void Select(const float* values, int64_t n, std::span<const int64_t> ranks, float* out,
              int64_t first = 0);

  // The values of [w, w + n) split around `pivot`: those under it in [0,
  // lt), equal to it in [lt, le), over it in [le, n).
  struct Split {
    int64_t lt = 0, le = 0;
  };
  // Splits [w, w + n) in place around `pivot`; `over` is scratch for n +
  // kColumnPassSlack floats.
  using Partition = Split (*)(float* w, int64_t n, float pivot, float* over);
  // A kernel's partition and selection of a few values (order_select.cc).
  struct Kernel;

 private:
  // Select's work on w[0, n), which holds ranks [base, base + n) of the
  // values: out[i] for each of `ranks`; `depth` partitions made before.
  void SelectIn(float* w, int64_t n, std::span<const int64_t> ranks, int64_t base, float* out,
                int depth);

  const Kernel* kernel_;
  const int depth_limit_;
  std::vector<float> work_, over_;
};

}  // namespace pricer
