// The counter-based random numbers of the model: Philox4x32-10 (Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the generator of
// Random123 and cuRAND) and the conversions to uniforms and normals.
//
// Every draw is a pure function of (seed, stream, indices), so a path's shocks
// do not depend on shard widths, devices, backends or threads. The functions
// are __host__ __device__ so the CPU build tests the code the GPU runs. The
// exact mapping is documented in docs/rng.md; keep the two in step.
#pragma once

#include <cmath>
#include <cstdint>

#include "server/model/host_device.h"

namespace pricer {

struct PhiloxCounter {
  uint32_t v[4];
};

struct PhiloxKey {
  uint32_t v[2];
};

namespace philox_internal {

inline constexpr uint32_t kMultiplier0 = 0xD2511F53u;
inline constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;

PRICER_HOST_DEVICE inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

PRICER_HOST_DEVICE inline PhiloxCounter Round(PhiloxCounter c, PhiloxKey k) {
  uint32_t hi0, lo0, hi1, lo1;
  MulHiLo(kMultiplier0, c.v[0], &hi0, &lo0);
  MulHiLo(kMultiplier1, c.v[2], &hi1, &lo1);
  return PhiloxCounter{{hi1 ^ c.v[1] ^ k.v[0], lo1, hi0 ^ c.v[3] ^ k.v[1], lo0}};
}

}  // namespace philox_internal

// Philox4x32 with 10 rounds: four 32-bit words from a 128-bit counter and a
// 64-bit key.
PRICER_HOST_DEVICE inline PhiloxCounter Philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.v[0] += philox_internal::kWeyl0;
      key.v[1] += philox_internal::kWeyl1;
    }
    counter = philox_internal::Round(counter, key);
  }
  return counter;
}

// The independent streams of one seed: word 3 of every counter.
enum class RandomStream : uint32_t {
  kShocks = 0,      // z[p, i]
  kSpot = 1,        // generated market: spot[i]
  kVolatility = 2,  // generated market: volatility[i]
  kScenarios = 3,   // generated scenarios: A[i, j]
};

PRICER_HOST_DEVICE inline PhiloxKey KeyFromSeed(uint64_t seed) {
  return PhiloxKey{{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
}

// A uniform in the open interval (0, 1) from the top 23 bits of a word:
// (floor(x / 2^9) + 0.5) / 2^23, exact in float32 (2k + 1 < 2^24 fits the
// significand), never 0 or 1. With 24 bits, k + 0.5 would round for
// k >= 2^23 and x = 0xffffffff would give exactly 1.
PRICER_HOST_DEVICE inline float UniformOpen01(uint32_t x) {
  return (static_cast<float>(x >> 9) + 0.5f) * (1.0f / 8388608.0f);
}

// Box-Muller: two words give two independent standard normals,
// z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), r = sqrt(-2 ln u1).
PRICER_HOST_DEVICE inline void BoxMuller(uint32_t a, uint32_t b, float* z0, float* z1) {
  const float u1 = UniformOpen01(a);
  const float u2 = UniformOpen01(b);
  const float r = sqrtf(-2.0f * logf(u1));
  const float angle = 6.28318530717958647692f * u2;
  *z0 = r * cosf(angle);
  *z1 = r * sinf(angle);
}

// The four words of block `block` of row `row` in `stream`: counter
// (block, row low word, row high word, stream), key = seed.
PRICER_HOST_DEVICE inline PhiloxCounter DrawBlock(uint64_t seed, RandomStream stream, uint64_t row,
                                                  uint32_t block) {
  const PhiloxCounter counter{{block, static_cast<uint32_t>(row), static_cast<uint32_t>(row >> 32),
                               static_cast<uint32_t>(stream)}};
  return Philox4x32_10(counter, KeyFromSeed(seed));
}

// Shocks z[path, 4k .. 4k+3] for issuer block k: one Philox call, two
// Box-Muller pairs (words 0,1 -> issuers 4k, 4k+1; words 2,3 -> 4k+2, 4k+3).
PRICER_HOST_DEVICE inline void StandardNormals4(uint64_t seed, uint64_t path, uint32_t block,
                                                float out[4]) {
  const PhiloxCounter w = DrawBlock(seed, RandomStream::kShocks, path, block);
  BoxMuller(w.v[0], w.v[1], &out[0], &out[1]);
  BoxMuller(w.v[2], w.v[3], &out[2], &out[3]);
}

// The shocks of issuer block k on `path` as the model uses them: with
// antithetic paths, path 2k + 1 takes the negated shocks of path 2k.
PRICER_HOST_DEVICE inline void PathShocks4(uint64_t seed, uint64_t path, uint32_t block,
                                           bool antithetic, float out[4]) {
  const bool mirrored = antithetic && (path & 1u) != 0;
  StandardNormals4(seed, mirrored ? path - 1 : path, block, out);
  if (mirrored) {
    for (int m = 0; m < 4; ++m) out[m] = -out[m];
  }
}

// z[path, issuer]: the standard normal shock of one issuer on one path.
PRICER_HOST_DEVICE inline float StandardNormal(uint64_t seed, uint64_t path, uint32_t issuer) {
  float z[4];
  StandardNormals4(seed, path, issuer / 4, z);
  return z[issuer % 4];
}

// A uniform in (low, high) for element `index` of row `row` of `stream`;
// words are used in order: index 4k+m takes word m of block k.
PRICER_HOST_DEVICE inline float UniformAt(uint64_t seed, RandomStream stream, uint64_t row,
                                          uint32_t index, float low, float high) {
  const PhiloxCounter w = DrawBlock(seed, stream, row, index / 4);
  return low + (high - low) * UniformOpen01(w.v[index % 4]);
}

// Fills `count` uniforms of (low, high), elements [0, count) of row `row`,
// with one Philox call per four elements.
PRICER_HOST_DEVICE inline void UniformRow(uint64_t seed, RandomStream stream, uint64_t row,
                                          uint32_t count, float low, float high, float* out) {
  const float scale = high - low;
  for (uint32_t block = 0; block * 4 < count; ++block) {
    const PhiloxCounter w = DrawBlock(seed, stream, row, block);
    for (uint32_t m = 0; m < 4 && block * 4 + m < count; ++m) {
      out[block * 4 + m] = low + scale * UniformOpen01(w.v[m]);
    }
  }
}

}  // namespace pricer
