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

// Asks for the values 4 KiB ahead of `at`: the hardware prefetcher stops at
// each 4 KiB page, and SC comes from DRAM (the GEMM wrote a block of tens of
// MB before the pass reads it). At the seed example on Cooperlake kernels
// the statistics took 25% less thread time with it (8 KiB: the same). Past
// the column's end it asks for the next column's values: the address is
// computed as an integer, which is not a pointer past the array.
inline void PrefetchAhead(const float* at) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(at) + 4096));
}

// The values [p, rows) after the last full 16 of a pass, one at a time.
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

// The 16 lanes' figures of a pass, lane l taking the values at p = l (mod
// 16), summed into a ColumnPass in one fixed order (so every kernel's bits
// agree): the float64 sums (lane l + lane l + 4) + (lane l + 8 + lane l +
// 12), l = 0..3. Sixteen lanes, not eight: each lane's float64 adds wait on
// the one before (4 cycles), which held an 8-lane pass to 2 values a cycle.
struct PassLanes {
  static constexpr int kLanes = 16;
  double sums[kLanes] = {}, squares[kLanes] = {}, under[kLanes] = {};
  float least[kLanes] = {}, largest[kLanes] = {};
  int32_t counts[kLanes] = {};

  ColumnPass Sum(double shift, int64_t kept) const {
    ColumnPass pass;
    pass.shift = shift;
    pass.min = least[0];
    pass.max = largest[0];
    pass.sum = SumLanes16(sums);
    pass.squares = SumLanes16(squares);
    pass.below_sum = SumLanes16(under);
    for (int l = 0; l < kLanes; ++l) {
      pass.min = std::min(pass.min, least[l]);
      pass.max = std::max(pass.max, largest[l]);
      pass.below += counts[l];
    }
    pass.kept = kept;
    return pass;
  }
};

// What PassBody's window compares and sums against, in its vectors.
struct PassBounds {
  Doubles4 shift4, lo4;
  Floats8 lo8, hi8;
};

// Eight of PassBody's lanes (one half of its sixteen): the sums of their low
// and high four, their extremes and their count under the window.
struct PassHalf {
  Doubles4 s1_low = {}, s1_high = {}, s2_low = {}, s2_high = {}, under_low = {}, under_high = {};
  Ints8 under_count = {};
  Floats8 lo, hi;

  // Takes the eight values at `at`; copies those in the window to kept[n...]
  // and returns n plus their count.
  template <bool kSums, bool kExtremes, bool kWindow, bool kBounded, typename Compress,
            typename Widen>
  __attribute__((always_inline)) int64_t Take(const float* at, const PassBounds& b, float* kept,
                                              int64_t n) {
    const Doubles4 zero4 = {};
    Floats8 x;
    std::memcpy(&x, at, sizeof(x));
    Doubles4 low, high;
    Widen::Of(x, &low, &high);
    if constexpr (kExtremes) {
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    if constexpr (kSums) {
      s1_low += low - b.shift4;
      s1_high += high - b.shift4;
      s2_low += (low - b.shift4) * (low - b.shift4);
      s2_high += (high - b.shift4) * (high - b.shift4);
    }
    if constexpr (kWindow) {
      Ints8 keep = x <= b.hi8;
      if constexpr (kBounded) {
        const Ints8 under = x < b.lo8;
        keep &= ~under;
        under_count -= under;
        under_low += low < b.lo4 ? low : zero4;
        under_high += high < b.lo4 ? high : zero4;
      }
      n = Compress::Store(x, keep, kept, n);
    }
    return n;
  }

  // Its lanes as lanes [at, at + 8) of `lanes`.
  void Into(PassLanes& lanes, int at) const {
    for (int l = 0; l < 4; ++l) {
      lanes.sums[at + l] = s1_low[l], lanes.sums[at + l + 4] = s1_high[l];
      lanes.squares[at + l] = s2_low[l], lanes.squares[at + l + 4] = s2_high[l];
      lanes.under[at + l] = under_low[l], lanes.under[at + l + 4] = under_high[l];
    }
    for (int l = 0; l < 8; ++l) {
      lanes.least[at + l] = lo[l], lanes.largest[at + l] = hi[l];
      lanes.counts[at + l] = under_count[l];
    }
  }
};

// One pass over a column: the moments in float64 (sums shifted by the first
// value, so that the variance keeps its precision when the mean is large
// against the spread), and the values in the window copied to `kept` in
// their order, with the count and sum of those under it. Sixteen lanes, lane
// l taking the values at p = l (mod 16), in a fixed order: the bits are the
// same whichever compress runs. Here two vectors of eight a step (lanes 0-7
// and 8-15), each with its own sums.
template <bool kSums, bool kExtremes, bool kWindow, bool kBounded, typename Compress,
          typename Widen>
__attribute__((always_inline)) inline ColumnPass PassBody(const float* values, int64_t rows,
                                                          ColumnWindow window, float* kept) {
  const double shift = values[0];
  const PassBounds bounds{{shift, shift, shift, shift},
                          {window.lo, window.lo, window.lo, window.lo},
                          window.lo - Floats8{},
                          window.hi - Floats8{}};
  PassHalf first, second;  // two variables, not an array: kept in registers
  first.lo = first.hi = second.lo = second.hi = values[0] - Floats8{};
  int64_t n = 0, p = 0;
  for (; p + 16 <= rows; p += 16) {
    PrefetchAhead(values + p);
    n = first.Take<kSums, kExtremes, kWindow, kBounded, Compress, Widen>(values + p, bounds, kept,
                                                                         n);
    n = second.Take<kSums, kExtremes, kWindow, kBounded, Compress, Widen>(values + p + 8, bounds,
                                                                          kept, n);
  }
  PassLanes lanes;
  first.Into(lanes, 0);
  second.Into(lanes, 8);
  ColumnPass pass = lanes.Sum(shift, n);
  PassRemainder<kSums, kExtremes, kWindow, kBounded>(values, p, rows, window, kept, &pass);
  return pass;
}

// The same pass in AVX-512 (F, VL, DQ): sixteen values a step, each half's
// eight lanes' float64 sums in one 512-bit register (the AVX2 pass keeps
// them in two halves, lanes 0-3 and 4-7), and the window's compress of all
// sixteen by one vcompressps into a register, then one store (the form that
// writes memory is microcoded on some processors). Each lane takes the same
// values in the same order and the lanes are summed as PassBody sums them:
// the same bits.
template <bool kSums, bool kExtremes, bool kWindow, bool kBounded>
__attribute__((target("avx512f,avx512vl,avx512dq,popcnt"))) ColumnPass Avx512Pass(
    const float* values, int64_t rows, ColumnWindow window, float* kept) {
  const __m512d shift8 = _mm512_set1_pd(values[0]);
  const __m512d lo_d = _mm512_set1_pd(window.lo);
  const __m512 lo16 = _mm512_set1_ps(window.lo), hi16 = _mm512_set1_ps(window.hi);
  __m512d s1[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()}, s2[2] = {s1[0], s1[0]};
  __m512d under_sum[2] = {s1[0], s1[0]};
  __m512i under_count = _mm512_setzero_si512();
  __m512 lo = _mm512_set1_ps(values[0]), hi = lo;
  int64_t n = 0, p = 0;
  for (; p + 16 <= rows; p += 16) {
    PrefetchAhead(values + p);
    const __m512 x = _mm512_loadu_ps(values + p);
    if constexpr (kExtremes) {
      // As PassBody: x < lo ? x : lo, and x > hi ? x : hi, which is what
      // vminps and vmaxps return (for NaN and signed zeros too). All lanes
      // masked in, as the conversions below: GCC 12's maybe-uninitialized.
      lo = _mm512_mask_min_ps(lo, static_cast<__mmask16>(0xffff), x, lo);
      hi = _mm512_mask_max_ps(hi, static_cast<__mmask16>(0xffff), x, hi);
    }
    __m512d d[2];  // each half loaded again: cheaper than an extract
    for (int h = 0; (kSums || kBounded) && h < 2; ++h) {
      d[h] =
          _mm512_maskz_cvtps_pd(static_cast<__mmask8>(0xff), _mm256_loadu_ps(values + p + 8 * h));
    }
    if constexpr (kSums) {
      for (int h = 0; h < 2; ++h) {
        const __m512d centred = _mm512_sub_pd(d[h], shift8);
        s1[h] = _mm512_add_pd(s1[h], centred);
        s2[h] = _mm512_add_pd(s2[h], _mm512_mul_pd(centred, centred));
      }
    }
    if constexpr (kWindow) {
      __mmask16 keep = _mm512_cmp_ps_mask(x, hi16, _CMP_LE_OQ);
      if constexpr (kBounded) {
        const __mmask16 under = _mm512_cmp_ps_mask(x, lo16, _CMP_LT_OQ);
        keep &= static_cast<__mmask16>(~under);
        under_count = _mm512_sub_epi32(under_count, _mm512_movm_epi32(under));
        for (int h = 0; h < 2; ++h) {
          under_sum[h] = _mm512_mask_add_pd(
              under_sum[h], _mm512_cmp_pd_mask(d[h], lo_d, _CMP_LT_OQ), under_sum[h], d[h]);
        }
      }
      _mm512_storeu_ps(kept + n, _mm512_maskz_compress_ps(keep, x));
      n += __builtin_popcount(keep);
    }
  }
  PassLanes lanes;
  for (int h = 0; h < 2; ++h) {
    _mm512_storeu_pd(lanes.sums + 8 * h, s1[h]), _mm512_storeu_pd(lanes.squares + 8 * h, s2[h]);
    _mm512_storeu_pd(lanes.under + 8 * h, under_sum[h]);
  }
  _mm512_storeu_ps(lanes.least, lo);
  _mm512_storeu_ps(lanes.largest, hi);
  _mm512_storeu_si512(lanes.counts, under_count);
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

ReducerKernel ResolvedKernel(ReducerKernel kernel) {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2");
  switch (kernel) {
    case ReducerKernel::kPortable:
      return kernel;
    case ReducerKernel::kAvx2:
      return avx2 ? kernel : ReducerKernel::kPortable;
    case ReducerKernel::kAvx512:
      return avx512 ? kernel : ReducerKernel::kPortable;
    case ReducerKernel::kBest:
      break;
  }
  return avx512 ? ReducerKernel::kAvx512 : avx2 ? ReducerKernel::kAvx2 : ReducerKernel::kPortable;
}

ColumnPassFunction ChooseColumnPass(ReducerKernel kernel, bool sums, bool extremes, bool window,
                                    bool bounded) {
  static constexpr auto kPortable = PortablePasses(std::make_index_sequence<16>());
  static constexpr auto kAvx2 = Avx2Passes(std::make_index_sequence<16>());
  static constexpr auto kAvx512 = Avx512Passes(std::make_index_sequence<16>());
  const size_t index = (sums ? 8 : 0) + (extremes ? 4 : 0) + (window ? 2 : 0) + (bounded ? 1 : 0);
  switch (ResolvedKernel(kernel)) {
    case ReducerKernel::kAvx512:
      return kAvx512[index];
    case ReducerKernel::kAvx2:
      return kAvx2[index];
    default:
      return kPortable[index];
  }
}

}  // namespace pricer
