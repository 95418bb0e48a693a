#include "server/backends/cpu/tail_sum.h"

#include <immintrin.h>

#include <cstring>

#include "server/backends/cpu/compress8.h"

namespace pricer {
namespace {

constexpr int kLanes = 16;

// The lanes' sum (SumLanes16, the column pass's order), then the values
// [i, n) past the last full 16, one at a time.
TailSum Finish(const double* lanes, int64_t count, const float* values, int64_t i, int64_t n,
               double q) {
  TailSum tail;
  tail.sum = SumLanes16(lanes);
  tail.count = count;
  for (; i < n; ++i) {
    const double v = values[i];
    tail.sum += v <= q ? v : 0.0;
    tail.count += v <= q ? 1 : 0;
  }
  return tail;
}

// Sixteen values a step in four vectors of four doubles (lanes 0-3, 4-7,
// 8-11, 12-15), branch-free.
template <typename Widen>
__attribute__((always_inline)) inline TailSum TailSumBody(const float* values, int64_t n,
                                                          double q) {
  typedef int64_t Longs4 __attribute__((vector_size(32)));
  const Doubles4 q4 = q - Doubles4{}, zero4 = {};
  Doubles4 sums[4] = {};
  Longs4 counts = {};  // lanes of -1 per value at or under q
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int h = 0; h < 2; ++h) {
      Floats8 x;
      std::memcpy(&x, values + i + 8 * h, sizeof(x));
      Doubles4 low, high;
      Widen::Of(x, &low, &high);
      const Longs4 in_low = low <= q4, in_high = high <= q4;
      sums[2 * h] += in_low ? low : zero4;
      sums[2 * h + 1] += in_high ? high : zero4;
      counts += in_low + in_high;
    }
  }
  double lanes[kLanes];
  std::memcpy(lanes, sums, sizeof(lanes));
  return Finish(lanes, -(counts[0] + counts[1] + counts[2] + counts[3]), values, i, n, q);
}

TailSum PortableTailSum(const float* values, int64_t n, double q) {
  return TailSumBody<PortableWiden>(values, n, q);
}

__attribute__((target("avx2"), flatten)) TailSum Avx2TailSum(const float* values, int64_t n,
                                                             double q) {
  return TailSumBody<Avx2Widen>(values, n, q);
}

// Each half of 16 values widened into one register (lanes 0-7, 8-15), a
// compare to a mask, a masked add and the mask's count.
__attribute__((target("avx512f,avx512vl,avx512dq,popcnt"))) TailSum Avx512TailSum(
    const float* values, int64_t n, double q) {
  const __m512d q8 = _mm512_set1_pd(q);
  __m512d sums[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
  int64_t count = 0, i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int h = 0; h < 2; ++h) {
      // All lanes masked in: GCC 12's maybe-uninitialized (as the pass).
      const __m512d x =
          _mm512_maskz_cvtps_pd(static_cast<__mmask8>(0xff), _mm256_loadu_ps(values + i + 8 * h));
      const __mmask8 in = _mm512_cmp_pd_mask(x, q8, _CMP_LE_OQ);
      sums[h] = _mm512_mask_add_pd(sums[h], in, sums[h], x);
      count += __builtin_popcount(in);
    }
  }
  double lanes[kLanes];
  _mm512_storeu_pd(lanes, sums[0]);
  _mm512_storeu_pd(lanes + 8, sums[1]);
  return Finish(lanes, count, values, i, n, q);
}

}  // namespace

TailSumFunction ChooseTailSum(ReducerKernel kernel) {
  switch (ResolvedKernel(kernel)) {
    case ReducerKernel::kAvx512:
      return Avx512TailSum;
    case ReducerKernel::kAvx2:
      return Avx2TailSum;
    default:
      return PortableTailSum;
  }
}

}  // namespace pricer
