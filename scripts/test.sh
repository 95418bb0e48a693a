#!/usr/bin/env bash
# The README's test command (the first tier): installs the dependencies,
# builds (scripts/build.sh: Release, through ccache when it is installed), and
# runs every test once, the reliability suite included, side by side on the
# cores (ctest -j): the tests that need the machine to themselves (they bound
# latencies, RSS or a drain's timing, or build a container image) are
# RUN_SERIAL. The deep tier (scripts/test-deep.sh: the clang thread-safety
# build, the reliability passes again and under a CPU hog, fuzzing, ASan +
# UBSan + LSan and TSan) runs after it in CI (.ci/run). Prints each step's
# wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/steps.sh
step scripts/install-deps.sh
step scripts/build.sh
step ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout 900 -j "$(nproc)"
print_steps scripts/test.sh
