// The one pass over a column of SC that the cpu backend's reduction makes
// (server/backends/cpu/column_reducer.h): the moments in float64 and, at the
// same time, a copy of the values inside a window [lo, hi] with the count and
// sum of those under it. AVX-512 or AVX2 with a compress of the window's
// values when the processor has it (chosen at run time), else portable
// vector code; all give the same bits.
#pragma once

#include <cstdint>

namespace pricer {

// Values a window between two order statistics of a sample holds: lo <= v
// <= hi; `bounded` false when it reaches down to -infinity.
struct ColumnWindow {
  float lo = 0, hi = 0;
  bool bounded = false;
};

// What the pass found.
struct ColumnPass {
  double shift = 0;    // the first value
  double sum = 0;      // of (value - shift)
  double squares = 0;  // of (value - shift)^2
  float min = 0, max = 0;
  int64_t below = 0;     // values under the window
  double below_sum = 0;  // their sum
  int64_t kept = 0;      // values in the window, copied out in their order
};

// kBest: AVX-512 where the processor has it (F, VL, DQ), else AVX2, else the
// portable code. kAvx2 and kAvx512: that one where the processor has it,
// else the portable code. kPortable: the portable code, which tests compare
// the others with (the same bits).
enum class ReducerKernel { kBest, kPortable, kAvx2, kAvx512 };
// The kernel that runs for `kernel` on this processor: never kBest.
ReducerKernel ResolvedKernel(ReducerKernel kernel);

// A pass over `rows` values; `kept` has room for rows + kColumnPassSlack
// floats (the AVX-512 compress stores 16 lanes at a time).
using ColumnPassFunction = ColumnPass (*)(const float* values, int64_t rows, ColumnWindow window,
                                          float* kept);
constexpr int64_t kColumnPassSlack = 16;

// The pass that computes the sums of the mean and variance (when `sums`), the
// least and largest values (when `extremes`) and the window's copy (when
// `window`; `bounded` when its lower end may be finite). What is not asked
// for is left out of its loop.
ColumnPassFunction ChooseColumnPass(ReducerKernel kernel, bool sums, bool extremes, bool window,
                                    bool bounded);

}  // namespace pricer
