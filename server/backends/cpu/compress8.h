// Eight 32-bit lanes in GCC vector types, and the compress that stores the
// kept lanes of such a vector packed to the front: the portable one (every
// lane written, the count advanced past the kept ones, no branches) and
// AVX2's (a lane permutation from a table by the keep mask, one store). The
// column pass (column_pass.cc) stores values with them, and the
// contributions' candidate scan (column_attribution.cc) uses the table to
// store path indices.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace pricer {

typedef float Floats8 __attribute__((vector_size(32)));
typedef int32_t Ints8 __attribute__((vector_size(32)));

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

}  // namespace pricer
