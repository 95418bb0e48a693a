#!/usr/bin/env bash
# Installs the dependencies, builds, checks the lock annotations with clang
# (scripts/check-thread-safety.sh), runs the whole test suite once but the
# reliability tests, then the reliability suite three times, the last under a
# CPU hog (scripts/reliability.sh), each fuzz target for ${FUZZ_SECONDS:-60} s
# (scripts/fuzz.sh), and the suite under ASan + UBSan + LSan and TSan
# (scripts/check-sanitizers.sh). Each step's wall time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=()
step() {
  local start=$SECONDS
  "$@"
  steps+=("$(printf '%6ds  %s' $((SECONDS - start)) "$*")")
}
step scripts/install-deps.sh
step scripts/build.sh
step scripts/check-thread-safety.sh
step ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout 900 \
  -E '^(reliability_|device_faults_test\.)'
step scripts/reliability.sh
step scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
step scripts/check-sanitizers.sh
echo "== scripts/test.sh wall times"
printf '%s\n' "${steps[@]}"
