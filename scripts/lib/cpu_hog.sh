# Sourced by the scripts that test under load (reliability.sh, under-cpu-hog.sh).
#
# start_cpu_hog: one busy loop per core (nproc), so every test process shares
# its core with one that never sleeps; stop_cpu_hog ends them (and runs on
# EXIT once started). While it runs, PRICER_TEST_TIME_SCALE is at least 2
# (scripts/lib/time_scale.sh): the tests' wall-clock bounds double, as a
# process that gets half a core takes about twice as long.
source "$(dirname "${BASH_SOURCE[0]}")/time_scale.sh"
cpu_hogs=()
start_cpu_hog() {
  local _
  for _ in $(seq "$(nproc)"); do
    (while :; do :; done) &
    cpu_hogs+=($!)
  done
  trap stop_cpu_hog EXIT
  cpu_hog_saved_scale=${PRICER_TEST_TIME_SCALE-}
  raise_time_scale 2
}
stop_cpu_hog() {
  if ((${#cpu_hogs[@]})); then kill "${cpu_hogs[@]}" 2>/dev/null || true; fi
  cpu_hogs=()
  if [[ -n ${cpu_hog_saved_scale-} ]]; then
    export PRICER_TEST_TIME_SCALE=$cpu_hog_saved_scale
  else
    unset PRICER_TEST_TIME_SCALE
  fi
}
