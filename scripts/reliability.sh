#!/usr/bin/env bash
# The reliability suite (tests/reliability: the soak of 64 clients, the
# process faults, the device faults) PASSES times in a row, the last while a
# CPU hog keeps every core busy (scripts/lib/cpu_hog.sh); it must pass each
# time. Runs on a build that scripts/build.sh made (${BUILD_DIR:-build});
# prints the tests' figures and each pass's wall time. The README's test
# command (scripts/test.sh) runs the suite once with the rest; the deep tier
# (scripts/test-deep.sh) runs it twice more here, the second under the hog.
#
# Usage: scripts/reliability.sh [PASSES]   (default 3: the last under the hog)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cpu_hog.sh
build=${BUILD_DIR:-build}
passes=${1:-3}
pattern='^(reliability_|device_faults_test\.)'
timings=()
for ((pass = 1; pass <= passes; ++pass)); do
  label="pass $pass"
  if ((pass == passes && passes > 1)); then
    start_cpu_hog
    label+=" (CPU hog: $(nproc) busy loops)"
  fi
  echo "== reliability $label"
  start=$SECONDS
  ctest --test-dir "$build" --verbose --timeout 900 -R "$pattern"
  timings+=("$(printf '%-40s %5ds' "$label" $((SECONDS - start)))")
  stop_cpu_hog
done
echo "== reliability wall times"
printf '%s\n' "${timings[@]}"
