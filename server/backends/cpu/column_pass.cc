#include "server/backends/cpu/column_pass.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "server/backends/cpu/compress8.h"

namespace pricer {
namespace {

// Four doubles in explicit SIMD lanes (GCC vector extensions), beside
// compress8.h's eight floats and lane masks: AVX2 registers in the AVX2 pass,
// SSE pairs otherwise.
typedef double Doubles4 __attribute__((vector_size(32)));

// Asks for the values 4 KiB ahead of `at`: the hardware prefetcher stops at
// each 4 KiB page, and SC comes from DRAM (the GEMM wrote a block of tens of
// MB before the pass reads it). At the seed example on Cooperlake kernels
// the statistics took 25% less thread time with it (8 KiB: the same). Past
// the column's end it asks for the next column's values: the address is
// computed as an integer, which is not a pointer past the array.
inline void PrefetchAhead(const float* at) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(at) + 4096));
}

// The values [p, rows) after the last full 8 of a pass, one at a time.
template <bool kSums, bool kExtremes, bool kWindow, bool kBounded>
inline void PassRemainder(const float* values, int64_t p, int64_t rows, ColumnWindow window,
                          float* kept, ColumnPass* pass) {
  for (; p < rows; ++p) {
    const float v = values[p];
    if constexpr (kSums) {
      const double d = static_cast<double>(v) - pass->shift;
      pass->sum += d;
      pass->squares += d * d;
    }
    if constexpr (kExtremes) {
      pass->min = std::min(pass->min, v);
      pass->max = std::max(pass->max, v);
    }
    if constexpr (kWindow) {
      const bool under = kBounded && v < window.lo;
      kept[pass->kept] = v;
      pass->kept += !under && v <= window.hi ? 1 : 0;
      pass->below += under ? 1 : 0;
      pass->below_sum += under ? static_cast<double>(v) : 0.0;
    }
  }
}

// The eight lanes' figures of a pass, lane l taking the values at p = l (mod
// 8), summed into a ColumnPass in one fixed order (so every kernel's bits
// agree): the float64 sums lane l + lane l + 4, l = 0..3.
struct PassLanes {
  double sums[8] = {}, squares[8] = {}, under[8] = {};
  float least[8] = {}, largest[8] = {};
  int32_t counts[8] = {};

  ColumnPass Sum(double shift, int64_t kept) const {
    ColumnPass pass;
    pass.shift = shift;
    pass.min = least[0];
    pass.max = largest[0];
    for (int l = 0; l < 4; ++l) {
      pass.sum += sums[l] + sums[l + 4];
      pass.squares += squares[l] + squares[l + 4];
      pass.below_sum += under[l] + under[l + 4];
    }
    for (int l = 0; l < 8; ++l) {
      pass.min = std::min(pass.min, least[l]);
      pass.max = std::max(pass.max, largest[l]);
      pass.below += counts[l];
    }
    pass.kept = kept;
    return pass;
  }
};

// Lanes 0-3 and 4-7 of `x` as doubles (exact). The portable code converts
// with GCC's generic conversion; under AVX2 GCC 12 lowers that to four
// conversions of pairs with inserts and moves (9 instructions), where AVX's
// vcvtps2pd widens each half at once (3 with the extract).
struct PortableWiden {
  static void Of(const Floats8& x, Doubles4* low, Doubles4* high) {
    *low = __builtin_convertvector(__builtin_shufflevector(x, x, 0, 1, 2, 3), Doubles4);
    *high = __builtin_convertvector(__builtin_shufflevector(x, x, 4, 5, 6, 7), Doubles4);
  }
};
struct Avx2Widen {
  __attribute__((target("avx2"))) static void Of(const Floats8& x, Doubles4* low, Doubles4* high) {
    const __m256 v = (__m256)x;  // the same bits
    *low = (Doubles4)_mm256_cvtps_pd(_mm256_castps256_ps128(v));
    *high = (Doubles4)_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
  }
};

// One pass over a column: the moments in float64 (sums shifted by the first
// value, so that the variance keeps its precision when the mean is large
// against the spread), and the values in the window copied to `kept` in
// their order, with the count and sum of those under it. Eight lanes, lane l
// taking the values at p = l (mod 8), in a fixed order: the bits are the same
// whichever compress runs.
template <bool kSums, bool kExtremes, bool kWindow, bool kBounded, typename Compress,
          typename Widen>
__attribute__((always_inline)) inline ColumnPass PassBody(const float* values, int64_t rows,
                                                          ColumnWindow window, float* kept) {
  const double shift = values[0];
  const Doubles4 shift4 = {shift, shift, shift, shift};
  const Doubles4 zero4 = {};
  const Doubles4 lo4 = {window.lo, window.lo, window.lo, window.lo};
  const Floats8 lo8 = window.lo - Floats8{}, hi8 = window.hi - Floats8{};
  Doubles4 s1_low = {}, s1_high = {}, s2_low = {}, s2_high = {}, under_low = {}, under_high = {};
  Ints8 under_count = {};
  Floats8 lo = values[0] - Floats8{}, hi = lo;
  int64_t n = 0, p = 0;
  for (; p + 8 <= rows; p += 8) {
    PrefetchAhead(values + p);
    Floats8 x;
    std::memcpy(&x, values + p, sizeof(x));
    Doubles4 low, high;
    Widen::Of(x, &low, &high);
    if constexpr (kExtremes) {
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    if constexpr (kSums) {
      s1_low += low - shift4;
      s1_high += high - shift4;
      s2_low += (low - shift4) * (low - shift4);
      s2_high += (high - shift4) * (high - shift4);
    }
    if constexpr (kWindow) {
      Ints8 keep = x <= hi8;
      if constexpr (kBounded) {
        const Ints8 under = x < lo8;
        keep &= ~under;
        under_count -= under;
        under_low += low < lo4 ? low : zero4;
        under_high += high < lo4 ? high : zero4;
      }
      n = Compress::Store(x, keep, kept, n);
    }
  }
  PassLanes lanes;
  for (int l = 0; l < 4; ++l) {
    lanes.sums[l] = s1_low[l], lanes.sums[l + 4] = s1_high[l];
    lanes.squares[l] = s2_low[l], lanes.squares[l + 4] = s2_high[l];
    lanes.under[l] = under_low[l], lanes.under[l + 4] = under_high[l];
  }
  for (int l = 0; l < 8; ++l) {
    lanes.least[l] = lo[l], lanes.largest[l] = hi[l], lanes.counts[l] = under_count[l];
  }
  ColumnPass pass = lanes.Sum(shift, n);
  PassRemainder<kSums, kExtremes, kWindow, kBounded>(values, p, rows, window, kept, &pass);
  return pass;
}

// The same pass in AVX-512 (F, VL, DQ): the eight lanes' float64 sums in one
// 512-bit register each (the AVX2 pass keeps them in two halves, lanes 0-3
// and 4-7), so half the conversions and adds, and the window's compress by
// vcompressps into a register, then one store (the form that writes memory
// is microcoded on some processors). Each lane takes the same values in the
// same order and the lanes are summed as PassBody sums them: the same bits.
template <bool kSums, bool kExtremes, bool kWindow, bool kBounded>
__attribute__((target("avx512f,avx512vl,avx512dq,popcnt"))) ColumnPass Avx512Pass(
    const float* values, int64_t rows, ColumnWindow window, float* kept) {
  const __m512d shift8 = _mm512_set1_pd(values[0]);
  const __m512d lo_d = _mm512_set1_pd(window.lo);
  const __m256 lo8 = _mm256_set1_ps(window.lo), hi8 = _mm256_set1_ps(window.hi);
  __m512d s1 = _mm512_setzero_pd(), s2 = _mm512_setzero_pd(), under_sum = _mm512_setzero_pd();
  __m256i under_count = _mm256_setzero_si256();
  __m256 lo = _mm256_set1_ps(values[0]), hi = lo;
  int64_t n = 0, p = 0;
  for (; p + 8 <= rows; p += 8) {
    PrefetchAhead(values + p);
    const __m256 x = _mm256_loadu_ps(values + p);
    // maskz: the unmasked form trips GCC 12's maybe-uninitialized (its undefined source).
    const __m512d d = _mm512_maskz_cvtps_pd(static_cast<__mmask8>(0xff), x);
    if constexpr (kExtremes) {
      // As PassBody: x < lo ? x : lo, and x > hi ? x : hi, which is what
      // vminps and vmaxps return (the second operand unless the first is
      // less, or greater: for NaN and signed zeros too).
      lo = _mm256_min_ps(x, lo);
      hi = _mm256_max_ps(x, hi);
    }
    if constexpr (kSums) {
      const __m512d centred = _mm512_sub_pd(d, shift8);
      s1 = _mm512_add_pd(s1, centred);
      s2 = _mm512_add_pd(s2, _mm512_mul_pd(centred, centred));
    }
    if constexpr (kWindow) {
      __mmask8 keep = _mm256_cmp_ps_mask(x, hi8, _CMP_LE_OQ);
      if constexpr (kBounded) {
        const __mmask8 under = _mm256_cmp_ps_mask(x, lo8, _CMP_LT_OQ);
        keep &= static_cast<__mmask8>(~under);
        under_count = _mm256_sub_epi32(under_count, _mm256_movm_epi32(under));
        under_sum =
            _mm512_mask_add_pd(under_sum, _mm512_cmp_pd_mask(d, lo_d, _CMP_LT_OQ), under_sum, d);
      }
      _mm256_storeu_ps(kept + n, _mm256_maskz_compress_ps(keep, x));
      n += __builtin_popcount(keep);
    }
  }
  PassLanes lanes;
  _mm512_storeu_pd(lanes.sums, s1);
  _mm512_storeu_pd(lanes.squares, s2);
  _mm512_storeu_pd(lanes.under, under_sum);
  _mm256_storeu_ps(lanes.least, lo);
  _mm256_storeu_ps(lanes.largest, hi);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes.counts), under_count);
  ColumnPass pass = lanes.Sum(values[0], n);
  PassRemainder<kSums, kExtremes, kWindow, kBounded>(values, p, rows, window, kept, &pass);
  return pass;
}

template <bool kSums, bool kExtremes, bool kWindow, bool kBounded>
ColumnPass PortablePass(const float* values, int64_t rows, ColumnWindow window, float* kept) {
  return PassBody<kSums, kExtremes, kWindow, kBounded, PortableCompress, PortableWiden>(
      values, rows, window, kept);
}

// flatten: PassBody and the compress inlined into the AVX2 code.
template <bool kSums, bool kExtremes, bool kWindow, bool kBounded>
__attribute__((target("avx2,popcnt"), flatten)) ColumnPass Avx2Pass(const float* values,
                                                                    int64_t rows,
                                                                    ColumnWindow window,
                                                                    float* kept) {
  return PassBody<kSums, kExtremes, kWindow, kBounded, Avx2Compress, Avx2Widen>(values, rows,
                                                                                window, kept);
}

// Each kernel's 16 passes, at sums * 8 + extremes * 4 + window * 2 + bounded.
template <size_t... I>
constexpr std::array<ColumnPassFunction, 16> PortablePasses(std::index_sequence<I...>) {
  return {PortablePass<(I & 8) != 0, (I & 4) != 0, (I & 2) != 0, (I & 1) != 0>...};
}
template <size_t... I>
constexpr std::array<ColumnPassFunction, 16> Avx2Passes(std::index_sequence<I...>) {
  return {Avx2Pass<(I & 8) != 0, (I & 4) != 0, (I & 2) != 0, (I & 1) != 0>...};
}
template <size_t... I>
constexpr std::array<ColumnPassFunction, 16> Avx512Passes(std::index_sequence<I...>) {
  return {Avx512Pass<(I & 8) != 0, (I & 4) != 0, (I & 2) != 0, (I & 1) != 0>...};
}

}  // namespace

ColumnPassFunction ChooseColumnPass(ReducerKernel kernel, bool sums, bool extremes, bool window,
                                    bool bounded) {
  static constexpr auto kPortable = PortablePasses(std::make_index_sequence<16>());
  static constexpr auto kAvx2 = Avx2Passes(std::make_index_sequence<16>());
  static constexpr auto kAvx512 = Avx512Passes(std::make_index_sequence<16>());
  const size_t index = (sums ? 8 : 0) + (extremes ? 4 : 0) + (window ? 2 : 0) + (bounded ? 1 : 0);
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2");
  switch (kernel) {
    case ReducerKernel::kPortable:
      return kPortable[index];
    case ReducerKernel::kAvx2:
      return avx2 ? kAvx2[index] : kPortable[index];
    case ReducerKernel::kAvx512:
      return avx512 ? kAvx512[index] : kPortable[index];
    case ReducerKernel::kBest:
      break;
  }
  return avx512 ? kAvx512[index] : avx2 ? kAvx2[index] : kPortable[index];
}

}  // namespace pricer
