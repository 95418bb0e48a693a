#!/usr/bin/env bash
# The deep tier, after the README's test command (scripts/test.sh) on the same
# tree: what needs more time or another build. CI (.ci/run) runs both tiers.
#   - scripts/check-thread-safety.sh: the lock annotations under clang's
#     -Wthread-safety -Werror;
#   - scripts/reliability.sh 2: the reliability suite twice more (the first
#     tier ran it once), the second time under a CPU hog;
#   - scripts/fuzz.sh: each libFuzzer target for ${FUZZ_SECONDS:-75} s, two
#     at a time (docs/reliability.md has each target's executions against
#     one at a time);
#   - scripts/check-sanitizers.sh: the suite under ASan + UBSan + LSan, and
#     the threaded tests under TSan.
# Prints each step's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/steps.sh
step scripts/check-thread-safety.sh
step scripts/reliability.sh 2
step scripts/fuzz.sh "${FUZZ_SECONDS:-75}"
step scripts/check-sanitizers.sh
print_steps scripts/test-deep.sh
