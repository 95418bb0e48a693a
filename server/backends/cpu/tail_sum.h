// The sum and count of a column window's values at or under a quantile, the
// part of ES (statistics.h's TailMean) the cpu reducer
// (server/backends/cpu/column_reducer.h) takes from its window's copy: one
// pass in 16 fixed lanes, lane l taking the values at i = l (mod 16), in
// AVX-512 where the processor has it (chosen at run time), else AVX2 or
// portable vector code; every kernel sums the lanes in the same order, so
// all give the same bits.
#pragma once

#include <cstdint>

#include "server/backends/cpu/column_pass.h"

namespace pricer {

struct TailSum {
  double sum = 0;     // of the values <= q, each as a double
  int64_t count = 0;  // how many
};

using TailSumFunction = TailSum (*)(const float* values, int64_t n, double q);

// The kernel's tail sum (ReducerKernel as for the column pass).
TailSumFunction ChooseTailSum(ReducerKernel kernel);

}  // namespace pricer
