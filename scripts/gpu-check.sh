#!/usr/bin/env bash
# The CUDA backend on a real GPU, in one call that fits ten minutes, and a
# verdict: it exits non-zero on the first thing that fails.
#
#   scripts/gpu-check.sh pack      on the build machine (Debian 12 with the
#                                  CUDA Toolkit): builds with CUDA for sm_90
#                                  into build-gpu/ and packs pricerd, pricer,
#                                  the CUDA tests and the shared libraries
#                                  they load (not the CUDA driver or cuBLAS,
#                                  which the GPU machine has) into
#                                  .device/pricer-gpu.tar.xz
#   scripts/gpu-check.sh run       on the GPU machine (from the repository
#                                  root, with .device/ carried there):
#     1. libraries: cuBLAS from the CUDA Toolkit or from the pip wheels
#        (nvidia/cublas/lib of CUDA 12, nvidia/cu13/lib of CUDA 13); any
#        library a binary cannot find fails the check;
#     2. the CUDA tests with PRICER_REQUIRE_GPU=1 (a skipped GPU case fails);
#     3. values: a GPU server against a cpu server on the same requests at
#        the example's P = 10,000 (compare_results.py): stats with errors (the
#        window), wide quantiles (the sort), moments only, quantiles only
#        with errors, odd P with antithetic pairs, full output, TF32 and
#        BF16, terminal prices over several chunks;
#     4. a deadline and a cancel mid-job: the server's device and pinned
#        memory back to 0;
#     5. speed and memory: the example at full scale (the tail's stats in
#        FP32 and TF32, with errors, wide stats with a median, mean and
#        stddev alone),
#        full output at 1/10 scale, 16 jobs at once under a 2 GiB budget; the
#        engine's peak against what the GPU reports; fails when the process
#        passes its budget plus headroom, when the FP32 tail stats take more
#        than 1.3x the bare cuBLAS GEMM of the same shape (torch.matmul), or
#        when it is slower than PyTorch's chunked matmul + quantile.
#   scripts/gpu-check.sh rehearse [PRICERD PRICER]
#                                  here, without a GPU: steps 3 and 4 with a
#                                  cpu server in the GPU server's place, at
#                                  1/50 of the columns, from build/: the
#                                  script's own logic, checked in every CI
#                                  run before a GPU's time is spent on it
#   scripts/gpu-check.sh           pack, then run
#
# Steps 2 to 5 run one after another even when one fails (each under its own
# limit), so one call on a lent GPU reports on all of them.
#
# Results and logs go to $OUT (or .device/out) as well as to the terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source scripts/lib/pricerd_port.sh
# Steps 3 and 4: compare_values, stop_mid_job.
source scripts/lib/gpu_check_values.sh
pack_dir="$root/.device"
archive="$pack_dir/pricer-gpu.tar.xz"

pack() {
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DPRICER_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DPRICER_BUILD_BENCHMARKS=OFF > /dev/null
  cmake --build build-gpu -j"$(nproc)" --target pricerd pricer cuda_engine_test cuda_sizing_test \
    cuda_status_test cuda_window_kernel_test cuda_attribution_test
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/pricer/bin" "$stage/pricer/lib"
  local binaries=(build-gpu/server/pricerd build-gpu/client/pricer
    build-gpu/tests/backends/cuda/cuda_engine_test build-gpu/tests/backends/cuda/cuda_sizing_test
    build-gpu/tests/backends/cuda/cuda_status_test
    build-gpu/tests/backends/cuda/cuda_window_kernel_test
    build-gpu/tests/backends/cuda/cuda_attribution_test)
  cp "${binaries[@]}" "$stage/pricer/bin/"
  # The libraries the GPU machine lacks: everything but the C library, the
  # loader and what its CUDA installation provides.
  ldd "${binaries[@]}" | awk '/=> \// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt|libnvidia-ml)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/pricer/lib/"; done
  mkdir -p "$pack_dir"
  tar -C "$stage" -cJf "$archive" pricer
  rm -rf "$stage"
  echo "packed $(du -h "$archive" | cut -f1) into $archive"
}

# The GPU's used memory now, MiB (all processes: in a container nvidia-smi
# may not list this one's).
gpu_used_mib() {
  nvidia-smi --id=0 --query-gpu=memory.used --format=csv,noheader,nounits | tr -d ' '
}

# Until process $1 ends, the most GPU memory used (gpu_used_mib) into file $2.
watch_gpu() {
  local pid=$1 file=$2 peak=0 now
  while kill -0 "$pid" 2>/dev/null; do
    now=$(gpu_used_mib) || break
    if ((now > peak)); then
      peak=$now
      echo "$peak" > "$file"
    fi
    sleep 0.2
  done
}

# One row of the table: records the GPU's used memory, starts pricerd on the
# GPU with `server_flags`, runs `clients` CLI calls `pricer price "$@"` at
# once while polling the GPU's used memory, reads the devices, stops the
# server and records the used memory again. Prints seconds (the slowest
# call's server time, and the wall time of all), TFLOP/s (all calls' flops
# over the wall time), SC GB/s (SC bytes over the wall time: a lower bound of
# the D2H rate, which the gRPC stream also limits), the engine's peak, the
# process's peak (the GPU's used memory above what it was before the server
# started), the budget and the context headroom the server measured
# (ListDevices), and the MiB still used after the server stopped. Fails when
# the process's peak passes the budget plus that headroom. The CLI's summary
# line reads "priced M columns x P paths x N issuers in W s (server S s): G
# GFLOP/s".
price_row() {
  local label=$1 sc_bytes=$2 clients=$3
  shift 3
  local server_log="$out/$label.pricerd.log" peak_file="$out/$label.gpu-peak"
  local before
  before=$(gpu_used_mib)
  echo "$before" > "$peak_file"
  "$bin/pricerd" --listen 127.0.0.1:0 --metrics-listen "" --devices cuda "${server_flags[@]}" \
    > "$server_log" 2>&1 &
  local server=$!
  local port
  port=$(pricerd_port "$server_log" "$server") || return 1
  watch_gpu "$server" "$peak_file" &
  local watcher=$!
  local ok=0 c started ended
  local calls=()
  started=$(date +%s.%N)
  for ((c = 0; c < clients; c++)); do
    "$bin/pricer" price --target "127.0.0.1:$port" "$@" > "$out/$label.$c.log" 2>&1 &
    calls+=($!)
  done
  for c in "${calls[@]}"; do wait "$c" || ok=1; done
  ended=$(date +%s.%N)
  "$bin/pricer" devices --target "127.0.0.1:$port" --json > "$out/$label.devices.json" || ok=1
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  local after
  after=$(gpu_used_mib)
  if [[ $ok != 0 ]]; then
    echo "$label failed:" >&2
    tail -20 "$out/$label".*.log "$server_log" >&2
    return 1
  fi
  python3 - "$label" "$sc_bytes" "$clients" "$started" "$ended" "$before" "$(cat "$peak_file")" \
    "$after" "$out" <<'EOF'
import json, re, sys
label, sc_bytes, clients = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
started, ended = float(sys.argv[4]), float(sys.argv[5])
before, peak, after = (int(v) * 2**20 for v in sys.argv[6:9])
out = sys.argv[9]
flops, server = 0.0, 0.0
for c in range(clients):
    m = re.search(r"priced (\d+) columns x (\d+) paths x (\d+) issuers in ([\d.]+) s "
                  r"\(server ([\d.]+) s\)", open(f"{out}/{label}.{c}.log").read())
    flops += 2.0 * int(m[1]) * int(m[2]) * int(m[3])
    server = max(server, float(m[5]))
wall = ended - started
d = json.load(open(f"{out}/{label}.devices.json"))["devices"][0]
engine, budget = int(d.get("peakBytes", 0)), int(d["memoryBudgetBytes"])
headroom = int(d.get("headroomBytes", 0))
process = peak - before
gbs = f"{clients * sc_bytes / wall / 1e9:8.2f}" if sc_bytes > 0 else "       -"
verdict = "ok" if process <= budget + headroom else "OVER"
print(f"{label:<24} {server:8.2f} {wall:8.2f} {flops / wall / 1e12:8.2f} {gbs} "
      f"{engine / 2**30:8.2f} {process / 2**30:8.2f} {budget / 2**30:8.2f} "
      f"{headroom / 2**30:8.2f} {(after - before) / 2**20:8.0f}  {verdict}")
if verdict != "ok":
    print(f"{label}: the process used {process} bytes of the GPU at its peak, more than its "
          f"budget {budget} plus the measured headroom {headroom}", file=sys.stderr)
    sys.exit(1)
EOF
}

# The directories that hold cuBLAS 13 (libcublas.so.13) on this machine: the
# CUDA Toolkit's, or the pip wheels' (nvidia/cu13/lib for CUDA 13,
# nvidia/cublas/lib for 12) under any Python's site-packages.
cublas_dirs() {
  local dirs=() d site
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [[ -e $d/libcublas.so.13 ]] && dirs+=("$d")
  done
  for site in $(python3 -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null); do
    [[ -d $site/nvidia ]] || continue
    while read -r d; do dirs+=("$(dirname "$d")"); done < <(find "$site/nvidia" -name 'libcublas.so.13*' 2>/dev/null)
  done
  ((${#dirs[@]})) || return 0
  printf '%s\n' "${dirs[@]}" | awk 'NF && !seen[$0]++' | paste -sd: -
}

# Step 1: every binary finds every library it loads, or the check fails.
check_libraries() {
  local found missing b d
  found=$(cublas_dirs)
  # The driver's libraries (libcuda, libnvidia-ml) where the loader's cache
  # does not list them, as in containers that mount the driver.
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    [[ -e $d/libcuda.so.1 ]] && found="${found:+$found:}$d"
  done
  export LD_LIBRARY_PATH="$unpacked/pricer/lib${found:+:$found}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "cuBLAS 13 from: ${found:-nowhere}"
  missing=$(for b in "$bin"/*; do ldd "$b" | sed -n "s|^\s*\(.*not found\)|$(basename "$b"): \1|p"; done)
  if [[ -n $missing ]]; then
    echo "libraries not found:"
    echo "$missing"
    exit 1
  fi
  ldd "$bin/pricerd" | grep -E "cublas" || true
}

# Step 2.
cuda_tests() {
  echo "== CUDA tests (GPU against the cpu backend; a skipped GPU case fails)"
  local t
  for t in cuda_status_test cuda_sizing_test cuda_window_kernel_test cuda_engine_test \
    cuda_attribution_test; do
    if ! PRICER_REQUIRE_GPU=1 timeout 100 "$bin/$t" > "$out/$t.log" 2>&1; then
      grep -E "Failure|Expected|Which is|Value of|FAILED|error|Skipped" "$out/$t.log" | head -60
      tail -5 "$out/$t.log"
      exit 1
    fi
    grep -E "^\[  (PASSED|SKIPPED|FAILED) " "$out/$t.log"
  done
}

# The seconds of the bare cuBLAS GEMM of the example's shape for `columns`
# columns in FP32: torch.matmul of ST (10,000 x 500) and A in chunks of
# 16,384 columns, after a warm-up, timed with events. The service's stats
# run is held to 1.3x of it.
bare_gemm_seconds() {
  python3 - "$1" <<'PY'
import sys
import torch
columns = int(sys.argv[1])
torch.backends.cuda.matmul.allow_tf32 = False
st = torch.rand(10000, 500, device="cuda")
a = [torch.rand(500, 16384, device="cuda") for _ in range(2)]
out = torch.empty(10000, 16384, device="cuda")
torch.matmul(st, a[0], out=out)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
chunks = (columns + 16383) // 16384
start.record()
for k in range(chunks):
    torch.matmul(st, a[k % 2], out=out)
end.record()
torch.cuda.synchronize()
print(f"{start.elapsed_time(end) / 1000 * columns / (chunks * 16384):.4f}")
PY
}

# Step 5's verdict on speed: the FP32 stats run against the bare GEMM and
# against PyTorch's chunked matmul + quantile.
speed_verdict() {
  local server bare torch_seconds
  server=$(sed -n 's/.*(server \([0-9.]*\) s).*/\1/p' "$out/stats-1e6-fp32.0.log")
  bare=$(bare_gemm_seconds 1000000)
  torch_seconds=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["seconds"])' \
    "$out/torch-fp32.json")
  python3 - "$server" "$bare" "$torch_seconds" <<'PY' | tee -a "$out/table.txt"
import sys
server, bare, torch_seconds = map(float, sys.argv[1:])
ok = server <= 1.3 * bare and server <= torch_seconds
print(f"stats 1e6 fp32: server {server:.3f} s; bare cuBLAS GEMM {bare:.3f} s, "
      f"{server / bare:.2f}x (at most 1.3x); PyTorch {torch_seconds:.3f} s, "
      f"{torch_seconds / server:.2f}x slower (at least 1x): {'ok' if ok else 'TOO SLOW'}")
sys.exit(0 if ok else 1)
PY
}

# The steps of `run` after the libraries, each its own process under its
# own limit, seconds: one that fails or hangs does not stop the ones after
# it (a lent GPU's minutes are few), and the check fails at the end.
declare -A step_limits=([cuda_tests]=150 [values_and_stops]=150 [speed]=200)
# (Not `a && b`: that would turn off `set -e` inside a.)
values_and_stops() {
  compare_values
  stop_mid_job
}
speed() {
  performance
  speed_verdict
}

run() {
  out=${OUT:-$pack_dir/out}
  mkdir -p "$out"
  [[ -f "$archive" ]] || { echo "no $archive: run scripts/gpu-check.sh pack first"; exit 1; }
  unpacked=$(mktemp -d)
  tar -C "$unpacked" -xJf "$archive"
  bin="$unpacked/pricer/bin"
  check_libraries
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader |
    tee "$out/gpu.txt"
  export GPU_CHECK_BIN=$bin GPU_CHECK_OUT=$out
  local step failed=()
  for step in cuda_tests values_and_stops speed; do
    timeout "${step_limits[$step]}" "$0" step "$step" || failed+=("$step")
    # A step stopped at its limit leaves its servers behind.
    pkill -f "^$bin/pricerd" 2>/dev/null || true
  done
  if ((${#failed[@]})); then
    echo "gpu-check FAILED: ${failed[*]}"
    exit 1
  fi
  echo "gpu-check passed"
}

# One step of `run` (which exports GPU_CHECK_BIN and GPU_CHECK_OUT).
run_step() {
  bin=$GPU_CHECK_BIN out=$GPU_CHECK_OUT scale=1 gpu_devices=cuda
  [[ -n ${step_limits[$1]:-} ]] || { echo "no step $1"; exit 2; }
  "$1"
}

# Steps 3 and 4 here, with the binaries given (build/'s by default) and a cpu server in the GPU server's
# place and 1/50 of the columns in step 3 (tests/backends/CMakeLists.txt runs it:
# gpu_check_rehearsal_test).
rehearse() {
  out=${OUT:-$pack_dir/rehearsal}
  mkdir -p "$out"
  scale=50
  gpu_devices=cpu
  bin="$out/bin"
  mkdir -p "$bin"
  ln -sf "$(realpath "${1:-build/server/pricerd}")" "$(realpath "${2:-build/client/pricer}")" "$bin/"
  compare_values
  expect_a_difference_caught
  stop_mid_job
}

# Step 5.
performance() {
  echo "== the original example (500 issuers x 10,000 paths) on cuda0"
  echo "   engine: the engine's peak; process: the GPU's used memory at its peak above what it"
  echo "   was before the server started; headroom: measured by the server at start (ListDevices);"
  echo "   after: MiB still used after the server stopped"
  # The tail (the window) as PyTorch's baseline computes it, and wide
  # statistics whose median sends every column to the sort.
  local stats="mean,stddev,var:0.99,es:0.975" wide="mean,stddev,min,max,quantile:0.5,var:0.99,es:0.975"
  server_flags=()
  {
    printf '%-24s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n' job "server s" "wall s" TFLOP/s \
      "SC GB/s" "engine" "process" "budget" "headroom" "after"
    printf '%-24s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n' "" "" "" "" "" GiB GiB GiB GiB MiB
    price_row stats-1e6-fp32 0 1 --preset seed --scenarios 1000000 --stats "$stats"
    price_row stats-1e6-tf32 0 1 --preset seed --scenarios 1000000 --stats "$stats" \
      --precision tf32
    price_row stats-1e6-errors-fp32 0 1 --preset seed --scenarios 1000000 --stats "$stats" --errors
    price_row stats-1e6-wide-fp32 0 1 --preset seed --scenarios 1000000 --stats "$wide"
    price_row stats-1e6-basic-fp32 0 1 --preset seed --scenarios 1000000 --stats mean,stddev
    # The moments shortcut: S on the host once, the blocks' DGEMMs on the GPU.
    price_row moments-shortcut-1e6 0 1 --preset seed --scenarios 1000000 --stats mean,stddev \
      --moments-from-covariance
    price_row full-1e5-devnull $((10000 * 100000 * 4)) 1 --preset seed --scenarios 100000 \
      --stats mean --full-out /dev/null
    # 16 jobs at once under a budget they must share: they wait for memory.
    server_flags=(--device-memory 2GiB)
    price_row stats-16x1e5-2GiB 0 16 --preset seed --scenarios 100000 --stats "$stats"
  } | tee "$out/table.txt"

  echo "== the same on the same GPU in PyTorch: chunked torch.matmul + torch.quantile"
  local precision
  for precision in fp32 tf32; do
    python3 bench/torch_baseline.py --scenarios 1000000 --precision "$precision" |
      tee "$out/torch-$precision.json" |
      python3 -c 'import json, sys; r = json.load(sys.stdin); print("torch stats 1e6 %s: %.2f s, %.2f TFLOP/s, peak %.2f GiB" % (r["precision"], r["seconds"], r["tflops"], r["peak_bytes"] / 2**30))' |
      tee -a "$out/table.txt"
  done
}

case "${1:-all}" in
  pack) pack ;;
  run) run ;;
  rehearse) rehearse "${@:2}" ;;
  step) run_step "$2" ;;
  all) pack && run ;;
  *) echo "usage: scripts/gpu-check.sh [pack|run|rehearse|all] (step NAME: one step of run)"; exit 2 ;;
esac
