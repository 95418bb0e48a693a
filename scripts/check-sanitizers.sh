#!/usr/bin/env bash
# The test suite under the sanitizers (gcc, CPU only, no benchmarks):
#
#   asan: ${ASAN_BUILD_DIR:-build-asan}, -O1 -g with AddressSanitizer,
#         LeakSanitizer and UndefinedBehaviorSanitizer (any UB is fatal);
#         everything is built and the whole ctest suite runs, pricerd and the
#         CLI of the Python tests included (they find the binaries through
#         CMake's generator expressions, so they start the sanitized ones).
#         Left out: the deploy_* tests, which build a container image and
#         network namespaces from the main build and test the deployment, not
#         our binaries' memory.
#   tsan: ${TSAN_BUILD_DIR:-build-tsan}, -O1 -g with ThreadSanitizer; only the
#         C++ tests of the scheduler, the service and the cpu backend are built
#         and run (the threaded code).
#
# Usage: scripts/check-sanitizers.sh [asan|tsan|all]   (default all)
# Suppressions (third-party frames only, each line says why) are in
# tests/sanitizers/. Abseil is not built with TSan, so the TSan binaries are
# linked with tests/sanitizers/absl_mutex_tsan.cc, which reports absl::Mutex's
# locks to TSan. Exits non-zero on any finding or failed test; the wall time of
# each build and run is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
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

configure() {
  local dir=$1 flags=$2 link_flags=$3
  shift 3
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=g++ "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
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
asan_exclude='^deploy_'
asan_run() {
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
  fair_share_test)
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
# libgomp (the cpu backend's `#pragma omp parallel for`) is not built with TSan:
# a team's start and barriers synchronize through futexes TSan cannot see, and
# its frames are not on TSan's shadow stacks, so no suppression can name them.
# Teams of one thread: the parallel loops run on the calling (engine worker)
# thread, and the races TSan checks are those between our own threads.
export OMP_THREAD_LIMIT=1
# absl::Mutex's entry points, wrapped by absl_mutex_tsan.cc.
absl_symbols=(5Mutex4LockEv 5Mutex6UnlockEv 5Mutex7TryLockEv 5Mutex10ReaderLockEv
  5Mutex12ReaderUnlockEv 5Mutex13ReaderTryLockEv 5Mutex8LockWhenERKNS0_9ConditionE
  5Mutex14ReaderLockWhenERKNS0_9ConditionE
  5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE
  5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE 5Mutex5AwaitERKNS0_9ConditionE
  5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE
  5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE 7CondVar4WaitEPNS0_5MutexE
  7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE
  7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE)
tsan_build() {
  local absl_lib exported symbol wraps=""
  absl_lib=$(g++ -print-file-name=libabsl_synchronization.so)
  exported=$(nm -D --defined-only "$absl_lib") || return
  for symbol in "${absl_symbols[@]}"; do
    if ! grep -q " _ZN4absl7debian3$symbol\$" <<< "$exported"; then
      echo "$absl_lib lacks _ZN4absl7debian3$symbol: update absl_mutex_tsan.cc" >&2
      return 1
    fi
    wraps+=" -Wl,--wrap=_ZN4absl7debian3$symbol"
  done
  # An archive at the end of every link line (CMAKE_CXX_STANDARD_LIBRARIES):
  # pulled in only by the binaries that call absl::Mutex.
  mkdir -p "$tsan_dir" && shim=$(cd "$tsan_dir" && pwd)/libabsl_mutex_tsan.a || return
  g++ -std=c++20 -O1 -g -fsanitize=thread -c "$supp/absl_mutex_tsan.cc" \
    -o "${shim%.a}.o" || return
  rm -f "$shim" && ar rcs "$shim" "${shim%.a}.o" || return
  # column_reducer.cc's ColumnMoments has target_clones: its ifunc resolver
  # runs while the dynamic loader relocates the binary, before the TSan
  # runtime is up, and TSan's instrumentation of it (__tsan_func_entry)
  # crashes every binary at load. That one file is compiled without TSan.
  launcher=$(cd "$tsan_dir" && pwd)/compile.sh
  printf '%s\n' '#!/bin/sh' \
    'case "$*" in *server/backends/cpu/column_reducer.cc*) exec "$@" -fno-sanitize=thread ;; esac' \
    'exec "$@"' > "$launcher" && chmod +x "$launcher" || return
  configure "$tsan_dir" "-fsanitize=thread" "-fsanitize=thread$wraps" \
    "-DCMAKE_CXX_STANDARD_LIBRARIES=$shim" "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher" || return
  cmake --build "$tsan_dir" -j "$jobs" --target "${tsan_tests[@]}"
}
tsan_run() {
  local names
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
