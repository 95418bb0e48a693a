# Sourced by the scripts that run the tests slower by design (cpu_hog.sh,
# check-sanitizers.sh).
#
# raise_time_scale N: exports PRICER_TEST_TIME_SCALE as N, or as its current
# value when that is larger. The tests multiply their wall-clock bounds by it
# (tests/time_scale.h, tests/binaries.py): 2 beside the CPU hog, 3 under
# ASan, 5 under TSan.
raise_time_scale() {
  PRICER_TEST_TIME_SCALE=$(awk -v a="${PRICER_TEST_TIME_SCALE:-1}" -v b="$1" \
    'BEGIN { print (a > b ? a : b) }')
  export PRICER_TEST_TIME_SCALE
}
