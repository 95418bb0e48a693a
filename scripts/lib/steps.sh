# Sourced by the test tiers (test.sh, test-deep.sh).
#
# step COMMAND...: runs COMMAND and records its wall time (a failure stops the
# script: set -e); print_steps TITLE prints the recorded times.
steps=()
step() {
  local start=$SECONDS
  "$@"
  steps+=("$(printf '%6ds  %s' $((SECONDS - start)) "$*")")
}
print_steps() {
  echo "== $1 wall times"
  printf '%s\n' "${steps[@]}"
}
