// UniformRow (counter_rng.h) for the host, where it generates the scenario
// matrix A one column at a time (ScenarioMatrix::CopyColumns): 16 Philox
// blocks at once in AVX-512 where the processor has it, else UniformRow
// itself. The same bits either way: Philox is integer arithmetic, and the
// conversion to a uniform is the same float operations in the same order.
// At the original example (500 issuers) generating A took 2.1% of a stats
// run's samples on AVX-512 kernels.
#pragma once

#include <cstdint>

#include "server/model/counter_rng.h"

namespace pricer {

// Fills out[0, count) as UniformRow(seed, stream, row, count, low, high, out).
void UniformRowOnHost(uint64_t seed, RandomStream stream, uint64_t row, uint32_t count, float low,
                      float high, float* out);

// For tests: the AVX-512 code for the blocks it covers (UniformRow for the
// rest); false, and nothing written, where the processor lacks AVX-512 F.
bool UniformRowAvx512(uint64_t seed, RandomStream stream, uint64_t row, uint32_t count, float low,
                      float high, float* out);

}  // namespace pricer
