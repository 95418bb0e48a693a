#include "server/backends/cpu/column_pass.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace pricer {
namespace {

// Eight floats, four doubles and eight lane masks in explicit SIMD lanes (GCC
// vector extensions): AVX2 registers in the AVX2 pass, SSE pairs otherwise.
typedef float Floats8 __attribute__((vector_size(32)));
typedef double Doubles4 __attribute__((vector_size(32)));
typedef int32_t Ints8 __attribute__((vector_size(32)));

// The portable compress: every lane stored, the index advanced past the
// kept ones only (no branches).
struct PortableCompress {
  static int64_t Store(const Floats8& x, const Ints8& keep, float* out, int64_t n) {
    for (int l = 0; l < 8; ++l) {
      out[n] = x[l];
      n -= keep[l];  // a kept lane is -1
    }
    return n;
  }
};

// For each 8-bit mask, the lanes it keeps, in order: the permutation that
// packs them to the front of a vector.
struct CompressTable {
  alignas(32) int32_t lanes[256][8];
};
constexpr CompressTable MakeCompressTable() {
  CompressTable table{};
  for (int mask = 0; mask < 256; ++mask) {
    int n = 0;
    for (int lane = 0; lane < 8; ++lane) {
      if ((mask >> lane) & 1) table.lanes[mask][n++] = lane;
    }
  }
  return table;
}
constexpr CompressTable kCompressTable = MakeCompressTable();

// The AVX2 compress: one permutation and one unaligned store of 8 lanes.
struct Avx2Compress {
  __attribute__((target("avx2,popcnt"))) static int64_t Store(const Floats8& x, const Ints8& keep,
                                                              float* out, int64_t n) {
    const int mask = _mm256_movemask_ps(reinterpret_cast<__m256>(keep));
    const __m256i lanes =
        _mm256_load_si256(reinterpret_cast<const __m256i*>(kCompressTable.lanes[mask]));
    _mm256_storeu_ps(out + n, _mm256_permutevar8x32_ps(reinterpret_cast<__m256>(x), lanes));
    return n + __builtin_popcount(static_cast<unsigned>(mask));
  }
};

// The values [p, rows) after the last full 8 of a pass, one at a time.
template <bool kMoments, bool kWindow, bool kBounded>
inline void PassRemainder(const float* values, int64_t p, int64_t rows, ColumnWindow window,
                          float* kept, ColumnPass* pass) {
  for (; p < rows; ++p) {
    const float v = values[p];
    if constexpr (kMoments) {
      const double d = static_cast<double>(v) - pass->shift;
      pass->sum += d;
      pass->squares += d * d;
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

// One pass over a column: the moments in float64 (sums shifted by the first
// value, so that the variance keeps its precision when the mean is large
// against the spread), and the values in the window copied to `kept` in
// their order, with the count and sum of those under it. Eight lanes, lane l
// taking the values at p = l (mod 8), in a fixed order: the bits are the same
// whichever compress runs.
template <bool kMoments, bool kWindow, bool kBounded, typename Compress>
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
    Floats8 x;
    std::memcpy(&x, values + p, sizeof(x));
    const Doubles4 low =
        __builtin_convertvector(__builtin_shufflevector(x, x, 0, 1, 2, 3), Doubles4);
    const Doubles4 high =
        __builtin_convertvector(__builtin_shufflevector(x, x, 4, 5, 6, 7), Doubles4);
    if constexpr (kMoments) {
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
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
  ColumnPass pass;
  pass.shift = shift;
  pass.min = lo[0];
  pass.max = hi[0];
  for (int l = 0; l < 4; ++l) {
    pass.sum += s1_low[l] + s1_high[l];
    pass.squares += s2_low[l] + s2_high[l];
    pass.below_sum += under_low[l] + under_high[l];
  }
  for (int l = 0; l < 8; ++l) {
    pass.min = std::min(pass.min, lo[l]);
    pass.max = std::max(pass.max, hi[l]);
    pass.below += under_count[l];
  }
  pass.kept = n;
  PassRemainder<kMoments, kWindow, kBounded>(values, p, rows, window, kept, &pass);
  return pass;
}

template <bool kMoments, bool kWindow, bool kBounded>
ColumnPass PortablePass(const float* values, int64_t rows, ColumnWindow window, float* kept) {
  return PassBody<kMoments, kWindow, kBounded, PortableCompress>(values, rows, window, kept);
}

// flatten: PassBody and the compress inlined into the AVX2 code.
template <bool kMoments, bool kWindow, bool kBounded>
__attribute__((target("avx2,popcnt"), flatten)) ColumnPass Avx2Pass(const float* values,
                                                                    int64_t rows,
                                                                    ColumnWindow window,
                                                                    float* kept) {
  return PassBody<kMoments, kWindow, kBounded, Avx2Compress>(values, rows, window, kept);
}

}  // namespace

ColumnPassFunction ChooseColumnPass(ReducerKernel kernel, bool moments, bool window, bool bounded) {
  static constexpr std::array<ColumnPassFunction, 8> kPortable = {
      PortablePass<false, false, false>, PortablePass<false, false, true>,
      PortablePass<false, true, false>,  PortablePass<false, true, true>,
      PortablePass<true, false, false>,  PortablePass<true, false, true>,
      PortablePass<true, true, false>,   PortablePass<true, true, true>};
  static constexpr std::array<ColumnPassFunction, 8> kAvx2 = {
      Avx2Pass<false, false, false>, Avx2Pass<false, false, true>, Avx2Pass<false, true, false>,
      Avx2Pass<false, true, true>,   Avx2Pass<true, false, false>, Avx2Pass<true, false, true>,
      Avx2Pass<true, true, false>,   Avx2Pass<true, true, true>};
  const size_t index = (moments ? 4 : 0) + (window ? 2 : 0) + (bounded ? 1 : 0);
  const bool avx2 = kernel == ReducerKernel::kBest && __builtin_cpu_supports("avx2");
  return avx2 ? kAvx2[index] : kPortable[index];
}

}  // namespace pricer
