#include "tests/backends/cpu/cpu_engine_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "server/model/counter_rng.h"
#include "tests/time_scale.h"

namespace pricer {
namespace {

// A[i, j] of a generated scenario matrix, recomputed from the Philox words:
// word i % 4 of counter (i / 4, j low, j high, stream 3), key = seed.
double ReferenceScenario(uint64_t seed, int64_t i, int64_t j, double low, double high) {
  const PhiloxCounter counter{{static_cast<uint32_t>(i / 4), static_cast<uint32_t>(j),
                               static_cast<uint32_t>(static_cast<uint64_t>(j) >> 32), 3u}};
  const PhiloxCounter w = Philox4x32_10(counter, KeyFromSeed(seed));
  return low + (high - low) * ReferenceUniform(w.v[i % 4]);
}

}  // namespace

Market SpreadMarket(int64_t issuers) {
  Market market = MakeMarket({}, {}, 0.02, 1.0);
  for (int64_t i = 0; i < issuers; ++i) {
    market.spot.push_back(5.0 + 5.0 * static_cast<double>(i) / static_cast<double>(issuers));
    market.volatility.push_back(static_cast<double>((i * 37) % issuers) /
                                static_cast<double>(issuers));
  }
  return market;
}

int64_t BytesInUseAfterASecond(const Engine& engine, size_t device) {
  const auto deadline = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(1));
  while (engine.DeviceStatuses()[device].bytes_in_use != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return engine.DeviceStatuses()[device].bytes_in_use;
}

double ReferenceUniform(uint32_t x) { return (std::floor(x / 512.0) + 0.5) / 8388608.0; }

void ExpectProductMatches(const JobResult& result, const Dense& a, int64_t issuers) {
  ASSERT_FALSE(result.sc.empty());
  ASSERT_FALSE(result.st.empty());
  const double tolerance_factor = 2.0 * static_cast<double>(issuers + 2) * kFloatEpsilon;
  int64_t failures = 0;
  for (int64_t j = result.column_begin; j < result.column_end; ++j) {
    for (int64_t p = 0; p < result.paths; ++p) {
      double exact = 0, magnitude = 0;
      for (int64_t i = 0; i < issuers; ++i) {
        const double term = static_cast<double>(result.St(p, i)) * a[i + j * issuers];
        exact += term;
        magnitude += std::fabs(term);
      }
      const double error = std::fabs(result.Sc(p, j) - exact);
      if (!(error <= tolerance_factor * magnitude) && failures++ < 5) {
        ADD_FAILURE() << "SC[" << p << ", " << j << "] = " << result.Sc(p, j) << ", float64 "
                      << exact << ", error " << error << " > " << tolerance_factor * magnitude;
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

Dense ReferenceScenarios(uint64_t seed, int64_t issuers, int64_t columns, double low, double high) {
  Dense a(static_cast<size_t>(issuers * columns));
  for (int64_t j = 0; j < columns; ++j) {
    for (int64_t i = 0; i < issuers; ++i) {
      a[static_cast<size_t>(i + j * issuers)] = ReferenceScenario(seed, i, j, low, high);
    }
  }
  return a;
}

JobSpec ReproducibilitySpec(int64_t shard_columns, int64_t chunk_columns) {
  return MakeSpec(SpreadMarket(kIssuers), kPaths, kSeed,
                  ScenarioMatrix::Generated(kIssuers, kColumns, kScenarioSeed, 0.0f, 1.0f),
                  Output(true, true, true, chunk_columns), shard_columns);
}

}  // namespace pricer
