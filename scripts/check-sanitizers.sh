#!/usr/bin/env bash
# The test suite under the sanitizers (gcc, CPU only, no benchmarks):
#
#   asan: ${ASAN_BUILD_DIR:-build-asan}, -O1 -g1 with AddressSanitizer,
#         LeakSanitizer and UndefinedBehaviorSanitizer (any UB is fatal);
#         everything is built and the whole ctest suite runs, pricerd and the
#         CLI of the Python tests included (they find the binaries through
#         CMake's generator expressions, so they start the sanitized ones).
#         Left out: the deploy_* tests, which build a container image and
#         network namespaces from the main build and test the deployment, not
#         our binaries' memory; and the soak and process-fault tests, which
#         bound the server's RSS under glibc's allocator (ASan's keeps freed
#         memory in quarantine) and run under scripts/reliability.sh; and
#         the pip package test (client_python_package_test), which installs
#         the pure-Python client into venvs and runs no binary of ours but
#         the ones it compares against.
#   tsan: ${TSAN_BUILD_DIR:-build-tsan}, -O1 -g1 with ThreadSanitizer; only the
#         C++ tests of the scheduler, the service and the cpu backend are built
#         and run (the threaded code), OpenMP teams of one thread.
#
# Usage: scripts/check-sanitizers.sh [asan|tsan|all]   (default all)
# Suppressions (third-party frames only, each line says why) are in
# tests/sanitizers/. gRPC, protobuf and Abseil are not built with TSan: the
# TSan binaries link tests/sanitizers/absl_mutex_tsan.cc, which reports every
# absl::Mutex lock to TSan, gRPC's own included, and TSan does not check the
# accesses that uninstrumented libraries make through its interceptors
# (ignore_noninstrumented_modules). Exits non-zero on any finding or failed
# test; the wall time of each build and run is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/time_scale.sh
root=$PWD
parts=${1:-all}
jobs=$(nproc)
supp=$root/tests/sanitizers
asan_dir=${ASAN_BUILD_DIR:-build-asan}
tsan_dir=${TSAN_BUILD_DIR:-build-tsan}
timings=()
status=0

# timed LABEL COMMAND...: runs COMMAND, records its wall time; a failure is
# remembered (status) and the script goes on to the next part.
timed() {
  local label=$1 start=$SECONDS rc=0
  shift
  echo "== $label"
  "$@" || rc=$?
  timings+=("$(printf '%-12s %5ds  %s' "$label" $((SECONDS - start)) \
    "$([[ $rc == 0 ]] && echo ok || echo "FAILED ($rc)")")")
  [[ $rc == 0 ]] || status=1
  return $rc
}

# -g1: line tables only, all that the reports' stack traces print (file,
# line, function); full debug information made the ASan compile of
# price_reactor.cc 16.4 s instead of 12.0 and its object 9.9 MB instead of 4.4.
configure() {
  local dir=$1 flags=$2 link_flags=$3
  shift 3
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=g++ "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    "-DCMAKE_CXX_FLAGS=-fno-omit-frame-pointer $flags" \
    "-DCMAKE_EXE_LINKER_FLAGS=$link_flags" "-DCMAKE_SHARED_LINKER_FLAGS=$link_flags" \
    -DPRICER_CUDA=OFF -DPRICER_BUILD_BENCHMARKS=OFF -DPRICER_BUILD_TESTS=ON "$@" > /dev/null
}

# --- AddressSanitizer + LeakSanitizer + UBSan: everything, the whole suite.
# The options are exported before the build too: gtest_discover_tests runs the
# test binaries (--gtest_list_tests) at build time.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
asan_flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
asan_build() {
  configure "$asan_dir" "$asan_flags" "$asan_flags" || return
  cmake --build "$asan_dir" -j "$jobs"
}
asan_exclude='^(deploy_|reliability_soak_test$|reliability_process_faults_test$|client_python_package_test$|gpu_check_rehearsal_test$)'
asan_run() {
  # Tests run about 3 times slower: their wall-clock bounds scale.
  raise_time_scale 3
  ctest --test-dir "$asan_dir" --output-on-failure --timeout 1800 -j "$jobs" \
    -E "$asan_exclude"
}
if [[ $parts == all || $parts == asan ]]; then
  timed asan-build asan_build && timed asan-run asan_run || true
fi
unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS

# --- ThreadSanitizer: the scheduler, service and cpu backend tests.
tsan_tests=(shard_planner_test result_stream_test memory_account_test scheduler_test
  scheduler_fault_test scheduler_lost_device_test price_service_test multi_device_test
  upload_test auth_test column_reducer_test cpu_engine_test risk_closed_form_test
  fair_share_test shared_output_test)
# ignore_noninstrumented_modules: the accesses that uninstrumented libraries
# (gRPC, protobuf, Abseil, libstdc++) make through TSan's interceptors (recvmsg
# into gRPC's slices, their memcpy, operator new and delete) are not checked,
# as none of their own loads and stores are: they order them with atomics TSan
# cannot see. Without it, each message a test receives is a series of
# reports, each symbolized before a suppression drops it: the service tests
# ran 10-100 times slower, and the timing bounds of some failed. What this
# leaves out: a race whose one side is such a call, e.g. on a std::string's
# characters copied by libstdc++'s out-of-line code.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$supp/tsan.supp"
# libgomp (the cpu backend's `#pragma omp parallel for`) is not built with TSan:
# a team's start and barriers synchronize through futexes TSan cannot see, and
# its frames are not on TSan's shadow stacks, so no suppression can name them.
# Teams of one thread: the parallel loops run on the calling (engine worker)
# thread, and the races TSan checks are those between our own threads.
export OMP_THREAD_LIMIT=1
tsan_build() {
  local absl_lib exported symbol shim exports=""
  # absl_mutex_tsan.cc defines absl::Mutex's and CondVar's locking members: an
  # object on every test binary's link line, ahead of Abseil, its symbols
  # exported so that they interpose for the shared libraries too. Its name
  # carries its source's hash, so that a change relinks the binaries.
  mkdir -p "$tsan_dir" && rm -f "$tsan_dir"/absl_mutex_tsan-*.o || return
  shim=$(cd "$tsan_dir" && pwd)/absl_mutex_tsan-$(sha256sum < "$supp/absl_mutex_tsan.cc" | cut -c1-12).o
  g++ -std=c++20 -O1 -g1 -fsanitize=thread -Wall -Wextra -Werror -c "$supp/absl_mutex_tsan.cc" \
    -o "$shim" || return
  absl_lib=$(g++ -print-file-name=libabsl_synchronization.so)
  exported=$(nm -D --defined-only "$absl_lib") || return
  for symbol in $(nm --defined-only "$shim" | awk '$2 == "T" && $3 ~ /^_ZN4absl/ {print $3}'); do
    if ! grep -q " $symbol\$" <<< "$exported"; then
      echo "$absl_lib lacks $symbol: update absl_mutex_tsan.cc" >&2
      return 1
    fi
    exports+=" -Wl,--export-dynamic-symbol=$symbol"
  done
  # The second CMAKE_EXE_LINKER_FLAGS wins: executables only, not libraries.
  configure "$tsan_dir" "-fsanitize=thread" "-fsanitize=thread" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread $shim$exports" || return
  cmake --build "$tsan_dir" -j "$jobs" --target "${tsan_tests[@]}"
}
tsan_run() {
  local names
  # Tests run up to 5 times slower: their wall-clock bounds scale.
  raise_time_scale 5
  names=$(IFS='|'; echo "${tsan_tests[*]}")
  ctest --test-dir "$tsan_dir" --output-on-failure --timeout 1800 -j "$jobs" \
    -R "^($names)\\."
}
if [[ $parts == all || $parts == tsan ]]; then
  timed tsan-build tsan_build && timed tsan-run tsan_run || true
fi

echo "== wall times"
printf '%s\n' "${timings[@]}"
if [[ $status == 0 ]]; then echo "sanitizers: clean"; else echo "sanitizers: FAILED"; fi
exit $status
