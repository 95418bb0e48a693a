#!/usr/bin/env bash
# The CUDA backend on a real GPU, in one call that fits ten minutes.
#
#   scripts/gpu-check.sh pack   on the build machine (Debian 12 with the CUDA
#                               Toolkit): builds with CUDA for sm_90 into
#                               build-gpu/ and packs pricerd, pricer, the CUDA
#                               tests and the shared libraries they load (not
#                               the CUDA driver, runtime or cuBLAS) into
#                               .device/pricer-gpu.tar.xz
#   scripts/gpu-check.sh run    on the GPU machine (from the repository root,
#                               with .device/ carried there): unpacks, runs the
#                               CUDA tests against the cpu backend with
#                               PRICER_REQUIRE_GPU=1 (a skipped GPU case fails),
#                               then the original example in stats mode at
#                               full scale (500 x 10,000 x 1,000,000), in
#                               full-output mode at 1/10 scale, and 16 jobs at
#                               once under a 2 GiB budget, and prints a table:
#                               the engine's peak next to what the GPU reports
#                               the process used (nvidia-smi), and fails when
#                               that passes the budget plus the context
#                               headroom the server measured at start
#   scripts/gpu-check.sh        both, on a machine that can build and has a GPU
#
# Results and logs go to $OUT (or .device/out) as well as to the terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source scripts/lib/pricerd_port.sh
pack_dir="$root/.device"
archive="$pack_dir/pricer-gpu.tar.xz"

pack() {
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DPRICER_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DPRICER_BUILD_BENCHMARKS=OFF > /dev/null
  cmake --build build-gpu -j"$(nproc)" --target pricerd pricer cuda_engine_test cuda_sizing_test \
    cuda_status_test cuda_window_kernel_test
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/pricer/bin" "$stage/pricer/lib"
  local binaries=(build-gpu/server/pricerd build-gpu/client/pricer
    build-gpu/tests/backends/cuda/cuda_engine_test build-gpu/tests/backends/cuda/cuda_sizing_test
    build-gpu/tests/backends/cuda/cuda_status_test
    build-gpu/tests/backends/cuda/cuda_window_kernel_test)
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

run() {
  [[ -f "$archive" ]] || { echo "no $archive: run scripts/gpu-check.sh pack first"; exit 1; }
  out=${OUT:-$pack_dir/out}
  mkdir -p "$out"
  local unpacked
  unpacked=$(mktemp -d)
  tar -C "$unpacked" -xJf "$archive"
  bin="$unpacked/pricer/bin"
  # cuBLAS from the machine's CUDA Toolkit, or else from the cuBLAS wheel
  # that PyTorch brings.
  local cublas_wheel
  cublas_wheel=$(python3 -c 'import os, nvidia.cublas as c; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null || true)
  export LD_LIBRARY_PATH="$unpacked/pricer/lib:/usr/local/cuda/lib64${cublas_wheel:+:$cublas_wheel}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  ldd "$bin/pricerd" | grep -E "cublas|not found" || true
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader |
    tee "$out/gpu.txt"

  echo "== CUDA tests (GPU against the cpu backend; a skipped GPU case fails)"
  local t
  for t in cuda_status_test cuda_sizing_test cuda_window_kernel_test cuda_engine_test; do
    if ! PRICER_REQUIRE_GPU=1 timeout 240 "$bin/$t" > "$out/$t.log" 2>&1; then
      grep -E "Failure|Expected|Which is|Value of|FAILED|error|Skipped" "$out/$t.log" | head -60
      tail -5 "$out/$t.log"
      exit 1
    fi
    grep -E "^\[  (PASSED|SKIPPED|FAILED) " "$out/$t.log"
  done

  echo "== the original example (500 issuers x 10,000 paths) on cuda0"
  echo "   engine: the engine's peak; process: the GPU's used memory at its peak above what it"
  echo "   was before the server started; headroom: measured by the server at start (ListDevices);"
  echo "   after: MiB still used after the server stopped"
  local stats="mean,stddev,min,max,quantile:0.5,var:0.99,es:0.975"
  server_flags=()
  {
    printf '%-24s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n' job "server s" "wall s" TFLOP/s \
      "SC GB/s" "engine" "process" "budget" "headroom" "after"
    printf '%-24s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n' "" "" "" "" "" GiB GiB GiB GiB MiB
    price_row stats-1e6-fp32 0 1 --preset seed --scenarios 1000000 --stats "$stats"
    price_row stats-1e6-tf32 0 1 --preset seed --scenarios 1000000 --stats "$stats" \
      --precision tf32
    price_row stats-1e6-basic-fp32 0 1 --preset seed --scenarios 1000000 --stats mean,stddev
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
  all) pack && run ;;
  *) echo "usage: scripts/gpu-check.sh [pack|run|all]"; exit 2 ;;
esac
