// Eight 32-bit lanes in GCC vector types, and the compress that stores the
// kept lanes of such a vector packed to the front: the portable one (every
// lane written, the count advanced past the kept ones, no branches) and
// AVX2's (a lane permutation from a table by the keep mask, one store). The
// column pass (column_pass.cc) and the selection's partition
// (order_select.cc) store values with them, and the contributions' candidate
// scan (column_attribution.cc) uses the table to store path indices. Also
// the widening of eight floats to two vectors of four doubles, portable and
// AVX2, and the order of a 16-lane float64 sum (the pass's and the tail
// sum's).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace pricer {

typedef float Floats8 __attribute__((vector_size(32)));
typedef int32_t Ints8 __attribute__((vector_size(32)));
// Four doubles: AVX2 registers in AVX2 code, SSE pairs otherwise.
typedef double Doubles4 __attribute__((vector_size(32)));

// For each 8-bit mask, the lanes it keeps, in order (the rest 0): the
// permutation that packs them to the front of a vector.
struct KeptLanesTable {
  alignas(32) int32_t lanes[256][8];
};
constexpr KeptLanesTable MakeKeptLanes() {
  KeptLanesTable table{};
  for (int mask = 0; mask < 256; ++mask) {
    int n = 0;
    for (int lane = 0; lane < 8; ++lane) {
      if ((mask >> lane) & 1) table.lanes[mask][n++] = lane;
    }
  }
  return table;
}
inline constexpr KeptLanesTable kKeptLanes = MakeKeptLanes();

// Stores the lanes of `x` whose `keep` lane is -1 at out[n...], in order, and
// returns n plus their count. Writes 8 floats from out + n whatever it keeps.
struct PortableCompress {
  static int64_t Store(const Floats8& x, const Ints8& keep, float* out, int64_t n) {
    for (int l = 0; l < 8; ++l) {
      out[n] = x[l];
      n -= keep[l];  // a kept lane is -1
    }
    return n;
  }
};

struct Avx2Compress {
  __attribute__((target("avx2,popcnt"))) static int64_t Store(const Floats8& x, const Ints8& keep,
                                                              float* out, int64_t n) {
    const int mask = _mm256_movemask_ps(reinterpret_cast<__m256>(keep));
    const __m256i lanes =
        _mm256_load_si256(reinterpret_cast<const __m256i*>(kKeptLanes.lanes[mask]));
    _mm256_storeu_ps(out + n, _mm256_permutevar8x32_ps(reinterpret_cast<__m256>(x), lanes));
    return n + __builtin_popcount(static_cast<unsigned>(mask));
  }
};

// The sum of 16 float64 lanes in the one order every kernel of the column
// pass and the tail sum uses, so that their bits agree: (l + l + 4) + (l + 8
// + l + 12) for l = 0..3, added in that order.
inline double SumLanes16(const double* lanes) {
  double sum = 0;
  for (int l = 0; l < 4; ++l) sum += (lanes[l] + lanes[l + 4]) + (lanes[l + 8] + lanes[l + 12]);
  return sum;
}

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

}  // namespace pricer
