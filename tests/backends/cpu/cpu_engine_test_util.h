// Shared pieces of the cpu engine tests (cpu_engine_*_test.cc): a market of
// spread spots and volatilities, the documented Philox mapping recomputed,
// the float64 product check of SC, and the reproducibility job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "server/model/job_spec.h"
#include "server/scheduler/engine.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {

// N issuers with spots in [5, 10) and volatilities in [0, 1).
Market SpreadMarket(int64_t issuers);

// Waits up to a second (times TimeScale()) for the device's bytes in use to
// return to zero: a stopped job's memory is back once its running shard ends
// (measured: each test that calls this takes under 0.7 s in all).
int64_t BytesInUseAfterASecond(const Engine& engine, size_t device = 0);

// The documented uniform (floor(x / 2^9) + 0.5) / 2^23.
double ReferenceUniform(uint32_t x);

// A as a dense N x M float64 matrix (column-major): inline values or the
// generated ones recomputed independently.
using Dense = std::vector<double>;

// SC must equal the float64 product of the returned ST and A up to the
// rounding of a float32 dot product of K terms, |error| <= ~K u sum |ST||A|
// (any summation order); 2 (K + 2) u leaves room for the rounding of A.
void ExpectProductMatches(const JobResult& result, const Dense& a, int64_t issuers);

// The N x M scenario matrix of ScenarioMatrix::Generated, recomputed.
Dense ReferenceScenarios(uint64_t seed, int64_t issuers, int64_t columns, double low, double high);

// The reproducibility case: M not a multiple of the alignment.
inline constexpr int64_t kPaths = 3000, kIssuers = 50, kColumns = 1000;
inline constexpr uint64_t kSeed = 42, kScenarioSeed = 99;

JobSpec ReproducibilitySpec(int64_t shard_columns, int64_t chunk_columns);

}  // namespace pricer
