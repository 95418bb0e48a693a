#include "server/model/uniform_rows.h"

#include <immintrin.h>

#include <cstring>

// GCC 12 warns that the undefined passthrough operand inside avx512fintrin.h's
// unmasked intrinsics may be used uninitialised (a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pricer {
namespace {

constexpr uint32_t kLanes = 16;  // blocks a step: 64 uniforms

// hi and lo of the 32 x 32-bit products of each lane of `x` with `m`.
__attribute__((target("avx512f"))) inline void MulHiLo16(__m512i m, __m512i x, __m512i* hi,
                                                         __m512i* lo) {
  *lo = _mm512_mullo_epi32(m, x);
  const __m512i even = _mm512_mul_epu32(m, x);  // lanes 0, 2, ...: 64-bit products
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(m, 32), _mm512_srli_epi64(x, 32));
  *hi = _mm512_mask_blend_epi32(static_cast<__mmask16>(0xAAAA), _mm512_srli_epi64(even, 32), odd);
}

// low + (high - low) * UniformOpen01(x) for each lane, in UniformRow's order.
__attribute__((target("avx512f"))) inline __m512 Uniforms(__m512i x, __m512 low, __m512 scale) {
  const __m512 open = _mm512_mul_ps(
      _mm512_add_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(x, 9)), _mm512_set1_ps(0.5f)),
      _mm512_set1_ps(1.0f / 8388608.0f));
  return _mm512_add_ps(low, _mm512_mul_ps(scale, open));
}

// Blocks [first, first + blocks) of the row (`blocks` a multiple of kLanes)
// into out[0, 4 blocks).
__attribute__((target("avx512f"))) void Avx512Blocks(uint64_t seed, RandomStream stream,
                                                     uint64_t row, uint32_t first, uint32_t blocks,
                                                     float low, float high, float* out) {
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(philox_internal::kMultiplier0));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(philox_internal::kMultiplier1));
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 low16 = _mm512_set1_ps(low), scale16 = _mm512_set1_ps(high - low);
  alignas(64) float words[4][kLanes];
  for (uint32_t b = 0; b < blocks; b += kLanes) {
    __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first + b)), lanes);
    __m512i c1 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(row)));
    __m512i c2 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(row >> 32)));
    __m512i c3 = _mm512_set1_epi32(static_cast<int>(stream));
    PhiloxKey key = KeyFromSeed(seed);
    for (int round = 0; round < 10; ++round) {  // as Philox4x32_10
      if (round > 0) {
        key.v[0] += philox_internal::kWeyl0;
        key.v[1] += philox_internal::kWeyl1;
      }
      __m512i hi0, lo0, hi1, lo1;
      MulHiLo16(m0, c0, &hi0, &lo0);
      MulHiLo16(m1, c2, &hi1, &lo1);
      c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1),
                            _mm512_set1_epi32(static_cast<int>(key.v[0])));
      c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3),
                            _mm512_set1_epi32(static_cast<int>(key.v[1])));
      c1 = lo1;
      c3 = lo0;
    }
    _mm512_store_ps(words[0], Uniforms(c0, low16, scale16));
    _mm512_store_ps(words[1], Uniforms(c1, low16, scale16));
    _mm512_store_ps(words[2], Uniforms(c2, low16, scale16));
    _mm512_store_ps(words[3], Uniforms(c3, low16, scale16));
    float* to = out + static_cast<size_t>(b) * 4;
    for (uint32_t l = 0; l < kLanes; ++l) {
      for (uint32_t w = 0; w < 4; ++w) to[l * 4 + w] = words[w][l];
    }
  }
}

}  // namespace

bool UniformRowAvx512(uint64_t seed, RandomStream stream, uint64_t row, uint32_t count, float low,
                      float high, float* out) {
  if (!__builtin_cpu_supports("avx512f")) return false;
  const uint32_t blocks = count / 4 / kLanes * kLanes;
  Avx512Blocks(seed, stream, row, 0, blocks, low, high, out);
  if (blocks * 4 < count) {  // the last step's uniforms that the row has
    alignas(64) float last[4 * kLanes];
    Avx512Blocks(seed, stream, row, blocks, kLanes, low, high, last);
    std::memcpy(out + blocks * 4, last, (count - blocks * 4) * sizeof(float));
  }
  return true;
}

void UniformRowOnHost(uint64_t seed, RandomStream stream, uint64_t row, uint32_t count, float low,
                      float high, float* out) {
  if (!UniformRowAvx512(seed, stream, row, count, low, high, out)) {
    UniformRow(seed, stream, row, count, low, high, out);
  }
}

}  // namespace pricer

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
