# Sourced by scripts/gpu-check.sh: its steps 3 (compare_values: a GPU server
# against a cpu server on the same requests) and 4 (stop_mid_job: a deadline
# and a cancel, memory back to 0), and for the rehearsal
# expect_a_difference_caught (the comparison reports a real difference).
# They read the caller's `bin` (pricerd and pricer), `out`, `scale` (columns
# divided by it) and `gpu_devices` (what the "GPU" server prices on: cuda, or
# cpu in a rehearsal), and need pricerd_port (scripts/lib/pricerd_port.sh).

# Starts pricerd named `name` on `devices` with the flags after them; sets
# started_port and started_pid.
start_server() {
  local name=$1 devices=$2
  shift 2
  "$bin/pricerd" --listen 127.0.0.1:0 --metrics-listen "" --devices "$devices" "$@" \
    > "$out/$name.pricerd.log" 2>&1 &
  started_pid=$!
  started_port=$(pricerd_port "$out/$name.pricerd.log" "$started_pid")
}

# `count` columns, fewer in a rehearsal.
columns() { echo $(($1 / scale)); }

# One comparison: `pricer price ARGS` on the GPU server and on the cpu
# server, each writing its results under $out/values, then
# compare_results.py of what `kind` names (stats: the --stats-out CSV; full:
# the --full-out .npy; prices: the --prices-out .npy; values: a book's
# --values-out .npy) within `tolerance`.
# Prints a row; fails the check when they differ.
compare() {
  local label=$1 kind=$2 tolerance=$3
  shift 3
  local flag=--stats-out suffix=csv format=stats
  case $kind in
    full) flag=--full-out suffix=npy format=npy ;;
    prices) flag=--prices-out suffix=npy format=npy ;;
    values) flag=--values-out suffix=npy format=npy ;;
  esac
  local side port file files=()
  for side in gpu cpu; do
    port=$gpu_port
    [[ $side == cpu ]] && port=$cpu_port
    file="$out/values/$label.$side.$suffix"
    if ! "$bin/pricer" price --target "127.0.0.1:$port" "$@" "$flag" "$file" \
      > "$out/values/$label.$side.log" 2>&1; then
      echo "$label on the $side server failed:"
      tail -5 "$out/values/$label.$side.log"
      exit 1
    fi
    files+=("$file")
  done
  local compared
  compared=$(python3 scripts/lib/compare_results.py "$format" "${files[@]}" \
    --tolerance "$tolerance" 2>&1) || true
  printf '%-26s %9s  %s\n' "$label" "$tolerance" "$compared" | tee -a "$out/values.txt"
  [[ $compared == *" ok "* ]] || { echo "$label: the GPU's results differ from the cpu's"; exit 1; }
  rm -f "${files[@]}"
}

# Euler contributions of ES 97.5% with delta and vega
# (--contributions-out): each of the three .npy files of the GPU server
# against the cpu server's within `tolerance` (Frobenius; SC's rounding may
# move a path across a tail's end, which moves a mean by one path's weight).
compare_contributions() {
  local label=$1 tolerance=$2
  shift 2
  local side port
  for side in gpu cpu; do
    port=$gpu_port
    [[ $side == cpu ]] && port=$cpu_port
    if ! "$bin/pricer" price --target "127.0.0.1:$port" "$@" --contributions es:0.975 \
      --sensitivities delta,vega --contributions-out "$out/values/$label.$side" \
      > "$out/values/$label.$side.log" 2>&1; then
      echo "$label on the $side server failed:"
      tail -5 "$out/values/$label.$side.log"
      exit 1
    fi
  done
  local part compared
  for part in "" .delta .vega; do
    compared=$(python3 scripts/lib/compare_results.py npy \
      "$out/values/$label.gpu.es_0.975$part.npy" "$out/values/$label.cpu.es_0.975$part.npy" \
      --tolerance "$tolerance" 2>&1) || true
    printf '%-26s %9s  %s\n' "$label${part:-.contributions}" "$tolerance" "$compared" |
      tee -a "$out/values.txt"
    [[ $compared == *" ok "* ]] || { echo "$label$part: the GPU's results differ"; exit 1; }
  done
  rm -f "$out/values/$label".*.npy
}

# The rehearsal's check of the comparison itself: two requests that differ
# only in their seed must be reported as differing, in a CSV and in a .npy
# (a comparison that always said "ok" would pass every rehearsal).
expect_a_difference_caught() {
  local seed format flag suffix files
  for format in stats npy; do
    flag=--stats-out suffix=csv
    [[ $format == npy ]] && flag=--full-out suffix=npy
    files=()
    for seed in 1 2; do
      "$bin/pricer" price --target "127.0.0.1:$cpu_port" --issuers 20 --paths 2000 \
        --scenarios 64 --seed "$seed" --stats mean,var:0.99 --errors \
        "$flag" "$out/values/seed$seed.$suffix" > /dev/null
      files+=("$out/values/seed$seed.$suffix")
    done
    if python3 scripts/lib/compare_results.py "$format" "${files[@]}" --tolerance 1e-5 \
      > "$out/values/seeds.$format.txt"; then
      echo "compare_results.py $format called two different results the same:"
      cat "$out/values/seeds.$format.txt"
      exit 1
    fi
    printf '%-26s %9s  %s\n' "seeds-differ-$format" 1e-5 "$(cat "$out/values/seeds.$format.txt")"
    rm -f "${files[@]}"
  done
}

# Step 3: the values. The cpu backend's GEMM is float32 too, its sums in
# another order: FP32 within 1e-5 of each statistic's scale, TF32 within
# 2e-3 and BF16 within 2e-2 (METHOD: tf32 near 3e-4 relative, bf16 between
# 1e-3 and 1e-2).
compare_values() {
  echo "== values: the GPU server against a cpu server (P = 10,000 unless said)"
  mkdir -p "$out/values"
  start_server gpu "$gpu_devices"
  gpu_port=$started_port gpu_pid=$started_pid
  start_server cpu cpu
  cpu_port=$started_port cpu_pid=$started_pid
  local tail="mean,stddev,var:0.99,es:0.975"
  local wide="min,max,quantile:0.05,quantile:0.5,quantile:0.95"
  local seed=(--preset seed --scenarios "$(columns 20000)")
  printf '%-26s %9s  %s\n' case tolerance "worst error / tolerance, where" | tee "$out/values.txt"
  compare stats-tail-errors stats 1e-5 "${seed[@]}" --stats "$tail" --errors
  compare stats-wide-sorted stats 1e-5 "${seed[@]}" --stats "$wide"
  compare moments-only-errors stats 1e-5 "${seed[@]}" --stats mean,stddev --errors
  compare moments-shortcut stats 1e-5 "${seed[@]}" --stats mean,stddev --moments-from-covariance
  compare quantiles-only-errors stats 1e-5 "${seed[@]}" --stats quantile:0.01,quantile:0.99 --errors
  compare odd-p-antithetic-errors stats 1e-5 --preset seed --paths 9999 --antithetic \
    --scenarios "$(columns 5000)" --stats "$tail,quantile:0.5" --errors
  compare stats-tail-tf32 stats 2e-3 "${seed[@]}" --stats "$tail" --precision tf32
  compare stats-tail-bf16 stats 2e-2 "${seed[@]}" --stats "$tail" --precision bf16
  compare full-output full 1e-5 --preset seed --scenarios "$(columns 2000)" --stats mean
  compare full-output-tf32 full 2e-3 --preset seed --scenarios "$(columns 2000)" --stats mean \
    --precision tf32
  # ST of 400,000 paths x 64 issuers, 100 MB: several chunks.
  compare prices-in-chunks prices 1e-5 --issuers 64 --paths 400000 --seed 7 --scenarios 256 \
    --stats mean
  compare_books "${seed[@]}" --stats "$tail" --errors
  compare_contributions contributions 1e-3 --preset seed --scenarios "$(columns 5000)" \
    --stats "$tail"
}

# A book of a call and a put on each of the example's 500 issuers (V built
# by the GPU's kernel, A 1,000 rows), on GBM paths and on 5,000 historical
# scenarios; `$@`: the request's other flags.
compare_books() {
  # Without NumPy (the device machine's python3 may lack it): the .npy by hand.
  python3 - "$out/values" <<'PY'
import random, struct, sys
with open(f"{sys.argv[1]}/book.csv", "w") as f:
    f.write("issuer,type,strike,expiry\n")
    f.writelines(f"{i},call,7.5,1.5\n{i},put,7.5,1.0\n" for i in range(500))
rng, rows, columns = random.Random(5), 5000, 500
header = f"{{'descr': '<f4', 'fortran_order': True, 'shape': ({rows}, {columns}), }}"
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(f"{sys.argv[1]}/returns.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack(f"<{rows * columns}f", *(rng.gauss(0, 0.3) for _ in range(rows * columns))))
PY
  local book=(--instruments-file "$out/values/book.csv")
  compare book-options-errors stats 1e-5 "$@" "${book[@]}"
  compare book-historical stats 1e-5 "$@" "${book[@]}" --returns-file "$out/values/returns.npy"
  compare book-values values 1e-5 --preset seed --scenarios 256 --stats mean "${book[@]}"
  compare_contributions book-contributions 1e-3 "$@" "${book[@]}" \
    --returns-file "$out/values/returns.npy"
}

# Polls the server on `port` until its devices and the pinned staging hold
# nothing, for up to 20 s; fails the check otherwise.
expect_memory_freed() {
  local label=$1 port=$2 held=""
  for _ in $(seq 1 100); do
    held=$("$bin/pricer" devices --target "127.0.0.1:$port" --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sum(int(d.get("bytesInUse", 0)) for d in r["devices"]) + int(r.get("pinnedBytesInUse", 0)))')
    if [[ $held == 0 ]]; then
      printf '%-26s memory back to 0\n' "$label" | tee -a "$out/values.txt"
      return 0
    fi
    sleep 0.2
  done
  echo "$label: the server still holds $held bytes 20 s after the job ended"
  exit 1
}

# Step 4: a deadline and a cancel in the middle of a long job.
stop_mid_job() {
  # At full scale even in a rehearsal: the job must still run when stopped.
  # 20 times the example's columns (2e14 flop): an H200 prices the example
  # itself in well under a second, within the deadline and before the cancel.
  echo "== a deadline and a cancel mid-job (the example at 20,000,000 columns)"
  local job=(--preset seed --scenarios 20000000 --stats mean,stddev,var:0.99,es:0.975)
  if "$bin/pricer" price --target "127.0.0.1:$gpu_port" "${job[@]}" --timeout 0.3 \
    > "$out/deadline.log" 2>&1; then
    echo "deadline: the job finished within 0.3 s, so nothing was stopped mid-job"
    exit 1
  fi
  grep -q DEADLINE_EXCEEDED "$out/deadline.log" || { cat "$out/deadline.log"; exit 1; }
  expect_memory_freed deadline "$gpu_port"
  "$bin/pricer" price --target "127.0.0.1:$gpu_port" "${job[@]}" > "$out/cancel.log" 2>&1 &
  local client=$!
  sleep 1
  # The client goes mid-job (a background job ignores SIGINT): its call
  # ends, and the server cancels the job.
  kill -TERM "$client"
  wait "$client" 2>/dev/null || true
  if grep -q "^priced" "$out/cancel.log"; then
    echo "cancel: the job finished within 1 s, so nothing was stopped mid-job"
    exit 1
  fi
  expect_memory_freed cancel "$gpu_port"
  kill "$gpu_pid" "$cpu_pid" 2>/dev/null || true
  wait "$gpu_pid" "$cpu_pid" 2>/dev/null || true
}

