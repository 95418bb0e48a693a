#include "server/model/counter_rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "server/model/uniform_rows.h"

namespace pricer {
namespace {

struct KnownAnswer {
  PhiloxCounter counter;
  PhiloxKey key;
  uint32_t expected[4];
};

// Random123's kat_vectors for philox4x32_10.
TEST(Philox4x32Test, MatchesRandom123KnownAnswers) {
  const KnownAnswer answers[] = {
      {{{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u}},
       {{0x00000000u, 0x00000000u}},
       {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       {{0xffffffffu, 0xffffffffu}},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       {{0xa4093822u, 0x299f31d0u}},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const KnownAnswer& answer : answers) {
    const PhiloxCounter out = Philox4x32_10(answer.counter, answer.key);
    for (int m = 0; m < 4; ++m) {
      EXPECT_EQ(out.v[m], answer.expected[m])
          << "word " << m << " of counter " << std::hex << answer.counter.v[0];
    }
  }
}

// The documented uniform: (floor(x / 2^9) + 0.5) / 2^23, in double.
double ReferenceUniform(uint32_t x) { return (std::floor(x / 512.0) + 0.5) / 8388608.0; }

TEST(UniformOpen01Test, EndpointsStayInsideTheOpenInterval) {
  const float lowest = UniformOpen01(0u);
  const float highest = UniformOpen01(0xffffffffu);
  EXPECT_GT(lowest, 0.0f);
  EXPECT_LT(highest, 1.0f);
  EXPECT_EQ(static_cast<double>(lowest), std::ldexp(1.0, -24));
  EXPECT_EQ(static_cast<double>(highest), 1.0 - std::ldexp(1.0, -24));
}

TEST(UniformOpen01Test, IsExactlyTheDocumentedFormulaForEveryValue) {
  // Every top-23-bit value k, with low bits 0 and all ones (they must not
  // matter): the float equals the exact double of the formula.
  int64_t mismatches = 0;
  for (uint32_t k = 0; k < (1u << 23); ++k) {
    for (const uint32_t low_bits : {0u, 0x1ffu}) {
      const uint32_t x = (k << 9) | low_bits;
      if (static_cast<double>(UniformOpen01(x)) != ReferenceUniform(x)) ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// z[p, i] recomputed in double from the Philox words: counter (i / 4, p low,
// p high, stream 0), key (seed low, seed high); words (0, 1) give issuers
// 4k, 4k + 1 and words (2, 3) give 4k + 2, 4k + 3 by Box-Muller.
double ReferenceNormal(uint64_t seed, uint64_t path, uint32_t issuer, double* radius) {
  const PhiloxCounter counter{
      {issuer / 4, static_cast<uint32_t>(path), static_cast<uint32_t>(path >> 32), 0u}};
  const PhiloxKey key{{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  const PhiloxCounter w = Philox4x32_10(counter, key);
  const int pair = static_cast<int>(issuer % 4) / 2;
  const double u1 = ReferenceUniform(w.v[2 * pair]);
  const double u2 = ReferenceUniform(w.v[2 * pair + 1]);
  *radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  return issuer % 2 == 0 ? *radius * std::cos(angle) : *radius * std::sin(angle);
}

TEST(StandardNormalTest, MatchesTheDocumentedMappingInDouble) {
  // float32 Box-Muller: the angle 2 pi u2 is rounded to a few 1e-7 rad, which
  // moves z by about radius * 1e-7; 1e-6 * (1 + radius) leaves a margin.
  const uint64_t seeds[] = {0, 42, (uint64_t{7} << 40) + 3};
  const uint64_t paths[] = {0, 1, 12345, (uint64_t{1} << 33) + 5};
  for (const uint64_t seed : seeds) {
    for (const uint64_t path : paths) {
      for (uint32_t issuer = 0; issuer < 12; ++issuer) {
        double radius = 0;
        const double expected = ReferenceNormal(seed, path, issuer, &radius);
        EXPECT_NEAR(StandardNormal(seed, path, issuer), expected, 1e-6 * (1.0 + radius))
            << "seed " << seed << " path " << path << " issuer " << issuer;
      }
    }
  }
  // Many paths of one block.
  double worst = 0;
  for (uint64_t path = 0; path < 100000; ++path) {
    for (uint32_t issuer = 0; issuer < 4; ++issuer) {
      double radius = 0;
      const double expected = ReferenceNormal(42, path, issuer, &radius);
      worst =
          std::max(worst, std::fabs(StandardNormal(42, path, issuer) - expected) / (1.0 + radius));
    }
  }
  EXPECT_LT(worst, 1e-6);
}

TEST(StandardNormalTest, StandardNormals4AgreesWithStandardNormal) {
  for (uint64_t path = 0; path < 100; ++path) {
    for (uint32_t block = 0; block < 5; ++block) {
      float z[4];
      StandardNormals4(7, path, block, z);
      for (uint32_t m = 0; m < 4; ++m) EXPECT_EQ(z[m], StandardNormal(7, path, 4 * block + m));
    }
  }
}

TEST(PathShocksTest, WithoutAntitheticPathsAreTheStandardNormals) {
  for (const uint64_t path :
       {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{77}, uint64_t{1} << 33}) {
    for (uint32_t block = 0; block < 3; ++block) {
      float shocks[4], normals[4];
      PathShocks4(11, path, block, false, shocks);
      StandardNormals4(11, path, block, normals);
      for (int m = 0; m < 4; ++m) EXPECT_EQ(shocks[m], normals[m]) << path << " " << block;
    }
  }
}

TEST(PathShocksTest, AntitheticOddPathIsExactlyTheNegatedEvenPath) {
  // Path 2k keeps its own normals; path 2k + 1 is their exact negation, so
  // every pair sums to exactly zero.
  for (const uint64_t seed : {uint64_t{0}, uint64_t{42}, (uint64_t{1} << 40) + 7}) {
    for (const uint64_t first : {uint64_t{0}, uint64_t{1} << 33}) {
      for (uint64_t k = 0; k < 500; ++k) {
        const uint64_t even = first + 2 * k;
        for (const uint32_t block : {0u, 1u, 9u}) {
          float normals[4], a[4], b[4];
          StandardNormals4(seed, even, block, normals);
          PathShocks4(seed, even, block, true, a);
          PathShocks4(seed, even + 1, block, true, b);
          for (int m = 0; m < 4; ++m) {
            ASSERT_EQ(a[m], normals[m])
                << "seed " << seed << " path " << even << " block " << block;
            ASSERT_EQ(b[m], -a[m]) << "seed " << seed << " path " << even + 1 << " block " << block;
            ASSERT_EQ(a[m] + b[m], 0.0f);
          }
        }
      }
    }
  }
}

TEST(StandardNormalTest, SampleMomentsAreThoseOfAStandardNormal) {
  // n draws: the standard errors of the sample mean, variance, skewness and
  // kurtosis of a normal sample are sqrt(1/n), sqrt(2/n), sqrt(6/n) and
  // sqrt(24/n); each must lie within 5 of them.
  const uint64_t paths = 1000000;
  const uint32_t issuers = 4;
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0, pair_product = 0;
  int64_t beyond_three = 0;
  for (uint64_t p = 0; p < paths; ++p) {
    float z[4];
    for (uint32_t i = 0; i < issuers; ++i) z[i] = StandardNormal(2024, p, i);
    for (uint32_t i = 0; i < issuers; ++i) {
      const double x = z[i];
      s1 += x;
      s2 += x * x;
      s3 += x * x * x;
      s4 += x * x * x * x;
      if (std::fabs(x) > 3.0) ++beyond_three;
    }
    // The two normals of one Box-Muller pair must be uncorrelated.
    pair_product += static_cast<double>(z[0]) * z[1] + static_cast<double>(z[2]) * z[3];
  }
  const double n = static_cast<double>(paths * issuers);
  const double mean = s1 / n;
  const double m2 = s2 / n - mean * mean;
  const double m3 = s3 / n - 3 * mean * s2 / n + 2 * mean * mean * mean;
  const double m4 = s4 / n - 4 * mean * s3 / n + 6 * mean * mean * s2 / n - 3 * std::pow(mean, 4);
  const double skew = m3 / std::pow(m2, 1.5);
  const double kurtosis = m4 / (m2 * m2);
  EXPECT_NEAR(mean, 0.0, 5 * std::sqrt(1 / n));
  EXPECT_NEAR(m2, 1.0, 5 * std::sqrt(2 / n));
  EXPECT_NEAR(skew, 0.0, 5 * std::sqrt(6 / n));
  EXPECT_NEAR(kurtosis, 3.0, 5 * std::sqrt(24 / n));
  // Correlation of pair members: standard error sqrt(1 / pairs).
  const double pairs = n / 2;
  EXPECT_NEAR(pair_product / pairs, 0.0, 5 * std::sqrt(1 / pairs));
  // P(|z| > 3) = 0.0026998 for a standard normal; binomial standard error.
  const double tail = 0.0026997960632601866;
  EXPECT_NEAR(beyond_three / n, tail, 5 * std::sqrt(tail * (1 - tail) / n));
}

TEST(UniformTest, UniformRowMatchesUniformAtElementByElement) {
  for (const RandomStream stream : {RandomStream::kSpot, RandomStream::kScenarios}) {
    for (const uint32_t count : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 13u, 500u}) {
      for (const uint64_t row : {uint64_t{0}, uint64_t{9}, (uint64_t{1} << 32) + 1}) {
        std::vector<float> values(count + 1, -42.0f);
        UniformRow(11, stream, row, count, -2.0f, 3.0f, values.data());
        for (uint32_t index = 0; index < count; ++index) {
          EXPECT_EQ(values[index], UniformAt(11, stream, row, index, -2.0f, 3.0f))
              << "count " << count << " row " << row << " index " << index;
          EXPECT_GT(values[index], -2.0f);
          EXPECT_LT(values[index], 3.0f);
        }
        EXPECT_EQ(values[count], -42.0f) << "wrote past count " << count;
      }
    }
  }
}

// The host's row generator (uniform_rows.h), AVX-512 where the processor has
// it: the same bits as UniformAt, element by element; counts around its
// step of 64 uniforms, rows past 2^32, seeds past 2^32, a range around 0.
TEST(UniformTest, TheHostsRowsMatchUniformAtElementByElement) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  for (const uint32_t count : {1u, 4u, 63u, 64u, 65u, 128u, 131u, 500u, 1000u}) {
    for (const uint64_t row : {uint64_t{0}, uint64_t{77}, (uint64_t{5} << 32) + 3}) {
      for (const uint64_t seed : {uint64_t{11}, (uint64_t{1} << 40) + 9}) {
        std::vector<float> host(count + 1, -42.0f), avx(count + 1, -42.0f);
        UniformRowOnHost(seed, RandomStream::kScenarios, row, count, -2.0f, 3.0f, host.data());
        EXPECT_EQ(
            UniformRowAvx512(seed, RandomStream::kScenarios, row, count, -2.0f, 3.0f, avx.data()),
            avx512);
        for (uint32_t index = 0; index < count; ++index) {
          const float expected = UniformAt(seed, RandomStream::kScenarios, row, index, -2.0f, 3.0f);
          ASSERT_EQ(host[index], expected)
              << "count " << count << " row " << row << " at " << index;
          if (avx512) {
            ASSERT_EQ(avx[index], expected) << "count " << count << " at " << index;
          }
        }
        EXPECT_EQ(host[count], -42.0f) << "wrote past count " << count;
        EXPECT_EQ(avx[count], -42.0f) << "wrote past count " << count;
      }
    }
  }
}

TEST(UniformTest, UniformAtIsTheDocumentedWordOfTheDocumentedCounter) {
  // index 4k + m takes word m of counter (k, row low, row high, stream).
  const uint64_t seed = (uint64_t{5} << 32) + 17;
  const uint64_t row = (uint64_t{3} << 32) + 99;
  for (uint32_t index = 0; index < 40; ++index) {
    const PhiloxCounter counter{{index / 4, 99u, 3u, 3u}};
    const PhiloxCounter w = Philox4x32_10(counter, PhiloxKey{{17u, 5u}});
    const double expected = 1.0 + 4.0 * ReferenceUniform(w.v[index % 4]);
    EXPECT_NEAR(UniformAt(seed, RandomStream::kScenarios, row, index, 1.0f, 5.0f), expected, 1e-6);
  }
}

// How many of `count` draws of two generators coincide.
int CommonValues(const std::vector<float>& a, const std::vector<float>& b) {
  int same = 0;
  for (size_t k = 0; k < a.size(); ++k) same += a[k] == b[k] ? 1 : 0;
  return same;
}

std::vector<float> Row(uint64_t seed, RandomStream stream, uint64_t row) {
  std::vector<float> values(64);
  UniformRow(seed, stream, row, 64, 0.0f, 1.0f, values.data());
  return values;
}

TEST(UniformTest, StreamsSeedsAndRowsAreDistinct) {
  // 64 uniforms on a 2^-23 grid: a chance coincidence is ~1e-5 per pair.
  const RandomStream streams[] = {RandomStream::kShocks, RandomStream::kSpot,
                                  RandomStream::kVolatility, RandomStream::kScenarios};
  for (const RandomStream a : streams) {
    for (const RandomStream b : streams) {
      if (a == b) continue;
      EXPECT_LE(CommonValues(Row(42, a, 0), Row(42, b, 0)), 1);
    }
  }
  // Seeds that differ only in the high word, rows only in the high word.
  const uint64_t high = uint64_t{1} << 32;
  EXPECT_LE(CommonValues(Row(42, RandomStream::kSpot, 0), Row(43, RandomStream::kSpot, 0)), 1);
  EXPECT_LE(CommonValues(Row(42, RandomStream::kSpot, 0), Row(42 + high, RandomStream::kSpot, 0)),
            1);
  EXPECT_LE(CommonValues(Row(42, RandomStream::kSpot, 5), Row(42, RandomStream::kSpot, 5 + high)),
            1);
  EXPECT_NE(StandardNormal(42, 0, 0), StandardNormal(42 + high, 0, 0));
  EXPECT_NE(StandardNormal(42, 7, 0), StandardNormal(42, 7 + high, 0));
  EXPECT_NE(StandardNormal(42, 7, 0), StandardNormal(43, 7, 0));
}

}  // namespace
}  // namespace pricer
