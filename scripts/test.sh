#!/usr/bin/env bash
# Installs the dependencies, builds, checks the lock annotations with clang
# (scripts/check-thread-safety.sh), and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/check-thread-safety.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout 900
