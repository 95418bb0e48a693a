#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz in build-fuzz (clang 14; the
# whole tree instrumented for coverage, AddressSanitizer and
# UndefinedBehaviorSanitizer) and runs each on a scratch copy of its seed
# corpus, tests/fuzz/corpus/<target>/, FUZZ_JOBS at a time (default: one
# per core). Fails when a target crashes, leaks, runs out of memory or takes
# over 10 s on one input; the input is kept under /tmp/fuzz-crashes/<target>/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]    each target for SECONDS (default 60)
#   scripts/fuzz.sh --runs N [TARGET...]     each target for N executions
set -euo pipefail
cd "$(dirname "$0")/.."

limit=(-max_total_time=60)
targets=()
while (($#)); do
  case $1 in
    --runs) limit=(-runs="$2"); shift 2 ;;
    [0-9]*) limit=(-max_total_time="$1"); shift ;;
    *) targets+=("$1"); shift ;;
  esac
done

build_dir=build-fuzz
sanitizers="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
# -g1 (line tables): what a crash's stack trace prints, at a fraction of the
# compile time of full debug information.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS="$sanitizers -fno-omit-frame-pointer" \
  -DPRICER_FUZZ=ON -DPRICER_CUDA=OFF -DPRICER_BUILD_BENCHMARKS=OFF > /dev/null
cmake --build "$build_dir" --target pricer_fuzzers -j "$(nproc)"

if ((${#targets[@]} == 0)); then
  for corpus in tests/fuzz/corpus/*/; do
    target=$(basename "$corpus")
    [[ -x $build_dir/tests/fuzz/$target ]] && targets+=("$target")
  done
fi

scratch=$(mktemp -d /tmp/pricer-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
crashes=/tmp/fuzz-crashes
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# fuzz_one TARGET: runs TARGET on its scratch corpus; writes its table row to
# $scratch/TARGET/row and, when it fails, keeps its log with the crash.
fuzz_one() {
  local target=$1 log=$scratch/$1/log start ms rc=0 executions cov result=ok
  mkdir -p "$scratch/$target" "$crashes/$target"
  cp -r "tests/fuzz/corpus/$target" "$scratch/$target/corpus"
  start=$(date +%s%N)
  "$build_dir/tests/fuzz/$target" "$scratch/$target/corpus" "${limit[@]}" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$crashes/$target/" > "$log" 2>&1 || rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if ((rc != 0)); then
    result="FAILED (exit $rc): $(ls -t "$crashes/$target" | head -1)"
    cp "$log" "$crashes/$target/log"
  fi
  printf '%-24s %12s %6s %6d.%d  %s\n' "$target" "${executions:-?}" "${cov:-?}" $((ms / 1000)) \
    $((ms % 1000 / 100)) "$result" > "$scratch/$target/row"
}

# FUZZ_JOBS targets at a time (default: one per core), each a single-threaded
# libFuzzer process, so each gets a core and its executions per second are
# those of a run alone.
jobs=${FUZZ_JOBS:-$(nproc)}
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  fuzz_one "$target" &
done
wait
failed=()
printf '%-24s %12s %6s %8s  %s\n' target executions cov seconds result
for target in "${targets[@]}"; do
  cat "$scratch/$target/row"
  if grep -q FAILED "$scratch/$target/row"; then failed+=("$target"); fi
done

if ((${#failed[@]} > 0)); then
  for target in "${failed[@]}"; do
    echo "--- $target ($crashes/$target/log)"
    grep -E -A30 '^==[0-9]+== ?ERROR|runtime error|^SUMMARY|deadly signal|timeout after' \
      "$crashes/$target/log" | head -60
  done
  exit 1
fi
