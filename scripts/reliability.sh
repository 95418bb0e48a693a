#!/usr/bin/env bash
# The reliability suite (tests/reliability: the soak of 64 clients, the
# process faults, the device faults) three times in a row, the third while a
# CPU hog keeps every core busy; it must pass each time. Runs on a build that
# scripts/build.sh made (${BUILD_DIR:-build}); prints the tests' figures and each
# pass's wall time.
#
# Usage: scripts/reliability.sh [PASSES]   (default 3: the last under the hog)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
passes=${1:-3}
pattern='^(reliability_|device_faults_test\.)'
hogs=()
stop_hogs() {
  if ((${#hogs[@]})); then kill "${hogs[@]}" 2>/dev/null || true; fi
  hogs=()
}
trap stop_hogs EXIT
timings=()
for ((pass = 1; pass <= passes; ++pass)); do
  label="pass $pass"
  if ((pass == passes && passes > 1)); then
    for _ in $(seq "$(nproc)"); do
      (while :; do :; done) &
      hogs+=($!)
    done
    label+=" (CPU hog: $(nproc) busy loops)"
  fi
  echo "== reliability $label"
  start=$SECONDS
  ctest --test-dir "$build" --verbose --timeout 900 -R "$pattern"
  timings+=("$(printf '%-40s %5ds' "$label" $((SECONDS - start)))")
  stop_hogs
done
echo "== reliability wall times"
printf '%s\n' "${timings[@]}"
