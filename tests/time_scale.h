// PRICER_TEST_TIME_SCALE: how many times slower than an unloaded machine a
// test run may be, a number >= 1 (1 when unset or empty). The scripts set it
// where a run is slow by design: 3 under ASan, 5 under TSan, 2 beside the
// CPU hog of scripts/under-cpu-hog.sh (the largest factor where several
// apply). Every wall-clock bound of the tests that is not derived from work
// measured in the same run is multiplied by it: how soon memory must be
// freed or a call end, how long a job's deadline leaves for its first
// shards, and how long a wait lasts before it fails the test. Bounds that
// would only assert speed do not belong in a test at all (bench/ measures
// speed). tests/binaries.py reads the same variable for the Python tests.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace pricer {

// PRICER_TEST_TIME_SCALE, read once; a value that is not a number >= 1 ends
// the test binary, since every bound would otherwise be wrong.
inline double TimeScale() {
  static const double scale = [] {
    const char* text = std::getenv("PRICER_TEST_TIME_SCALE");
    if (text == nullptr || *text == '\0') return 1.0;
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (*end != '\0' || !std::isfinite(value) || value < 1.0) {
      std::fprintf(stderr, "PRICER_TEST_TIME_SCALE is \"%s\", not a number >= 1\n", text);
      std::abort();
    }
    return value;
  }();
  return scale;
}

// `bound` times TimeScale(): Scaled(std::chrono::seconds(1)) is "within a
// second" on an unloaded machine, five under TSan.
inline std::chrono::milliseconds Scaled(std::chrono::milliseconds bound) {
  return std::chrono::milliseconds(
      static_cast<std::chrono::milliseconds::rep>(std::ceil(bound.count() * TimeScale())));
}

}  // namespace pricer
