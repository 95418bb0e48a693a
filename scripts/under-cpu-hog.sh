#!/usr/bin/env bash
# Runs COMMAND while a CPU hog keeps every core busy (scripts/lib/cpu_hog.sh:
# one busy loop per core, PRICER_TEST_TIME_SCALE=2), then stops the hog and
# exits with COMMAND's status. The deep tier's reliability pass runs this way;
# the whole suite three times in a row under it (README, "Tests"):
#   for i in 1 2 3; do scripts/under-cpu-hog.sh ctest --test-dir build -j 2 || break; done
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cpu_hog.sh
(($#)) || { echo "usage: scripts/under-cpu-hog.sh COMMAND [ARG...]" >&2; exit 2; }
start_cpu_hog
echo "== under a CPU hog ($(nproc) busy loops, PRICER_TEST_TIME_SCALE=$PRICER_TEST_TIME_SCALE): $*"
rc=0
"$@" || rc=$?
stop_cpu_hog
exit $rc
