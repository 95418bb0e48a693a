#!/usr/bin/env bash
# Installs the dependencies, builds, checks the lock annotations with clang
# (scripts/check-thread-safety.sh), runs the whole test suite, then each
# fuzz target for ${FUZZ_SECONDS:-60} s (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/check-thread-safety.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout 900
scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
