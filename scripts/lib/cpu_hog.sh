# Sourced by the scripts that test under load (reliability.sh, under-cpu-hog.sh).
#
# start_cpu_hog: one busy loop per core (nproc), so every test process shares
# its core with one that never sleeps; stop_cpu_hog ends them (and runs on
# EXIT once started). While it runs, PRICER_TEST_TIME_SCALE is at least
# CPU_HOG_TIME_SCALE (2): the tests' wall-clock bounds (tests/time_scale.h,
# tests/time_scale.py) double, as a process that gets half a core takes about
# twice as long.
CPU_HOG_TIME_SCALE=2
cpu_hogs=()
start_cpu_hog() {
  local _
  for _ in $(seq "$(nproc)"); do
    (while :; do :; done) &
    cpu_hogs+=($!)
  done
  trap stop_cpu_hog EXIT
  cpu_hog_saved_scale=${PRICER_TEST_TIME_SCALE-}
  export PRICER_TEST_TIME_SCALE=$(awk -v a="${PRICER_TEST_TIME_SCALE:-1}" \
    -v b=$CPU_HOG_TIME_SCALE 'BEGIN { print (a > b ? a : b) }')
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
