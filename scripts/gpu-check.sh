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
#                               full scale (500 x 10,000 x 1,000,000) and in
#                               full-output mode at 1/10 scale, and prints a
#                               table
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
    cuda_status_test
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/pricer/bin" "$stage/pricer/lib"
  local binaries=(build-gpu/server/pricerd build-gpu/client/pricer
    build-gpu/tests/backends/cuda/cuda_engine_test build-gpu/tests/backends/cuda/cuda_sizing_test
    build-gpu/tests/backends/cuda/cuda_status_test)
  cp "${binaries[@]}" "$stage/pricer/bin/"
  # The libraries the GPU machine lacks: everything but the C library, the
  # loader and what its CUDA installation provides.
  ldd "${binaries[@]}" | awk '/=> \// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/pricer/lib/"; done
  mkdir -p "$pack_dir"
  tar -C "$stage" -cJf "$archive" pricer
  rm -rf "$stage"
  echo "packed $(du -h "$archive" | cut -f1) into $archive"
}

# One row of the table: starts pricerd on the GPU, prices `$@` with the CLI,
# reads the device's peak and budget, stops the server. Prints seconds
# (server and wall), TFLOP/s, SC GB/s (SC bytes over server seconds: a lower
# bound of the D2H rate, which the gRPC stream also limits) and the peak
# against the budget. The CLI's summary line reads "priced M columns x P
# paths x N issuers in W s (server S s): G GFLOP/s".
price_row() {
  local label=$1 sc_bytes=$2
  shift 2
  local log="$out/$label.log" server_log="$out/$label.pricerd.log"
  "$bin/pricerd" --listen 127.0.0.1:0 --metrics-listen "" --devices cuda > "$server_log" 2>&1 &
  local server=$!
  local port
  port=$(pricerd_port "$server_log" "$server") || return 1
  local ok=0
  "$bin/pricer" price --target "127.0.0.1:$port" "$@" > "$log" 2>&1 &&
    "$bin/pricer" devices --target "127.0.0.1:$port" --json > "$out/$label.devices.json" || ok=1
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  if [[ $ok != 0 ]]; then
    echo "$label failed:" >&2
    tail -20 "$log" "$server_log" >&2
    return 1
  fi
  python3 - "$label" "$sc_bytes" "$log" "$out/$label.devices.json" <<'EOF'
import json, re, sys
label, sc_bytes, log, devices = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
m = re.search(r"priced (\d+) columns x (\d+) paths x (\d+) issuers in ([\d.]+) s "
              r"\(server ([\d.]+) s\)", open(log).read())
columns, paths, issuers = int(m[1]), int(m[2]), int(m[3])
wall, server = float(m[4]), float(m[5])
flops = 2.0 * paths * issuers * columns
d = json.load(open(devices))["devices"][0]
peak, budget = int(d["peakBytes"]), int(d["memoryBudgetBytes"])
gbs = f"{sc_bytes / server / 1e9:8.2f}" if sc_bytes > 0 else "       -"
print(f"{label:<26} {server:8.2f} {wall:8.2f} {flops / server / 1e12:8.2f} {gbs} "
      f"{peak / 2**30:9.2f} {budget / 2**30:9.2f}")
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
  for t in cuda_status_test cuda_sizing_test cuda_engine_test; do
    if ! PRICER_REQUIRE_GPU=1 timeout 240 "$bin/$t" > "$out/$t.log" 2>&1; then
      grep -E "Failure|Expected|Which is|Value of|FAILED|error|Skipped" "$out/$t.log" | head -60
      tail -5 "$out/$t.log"
      exit 1
    fi
    grep -E "^\[  (PASSED|SKIPPED|FAILED) " "$out/$t.log"
  done

  echo "== the original example (500 issuers x 10,000 paths) on cuda0"
  local stats="mean,stddev,min,max,quantile:0.5,var:0.99,es:0.975"
  {
    printf '%-26s %8s %8s %8s %8s %9s %9s\n' job "server s" "wall s" TFLOP/s "SC GB/s" \
      "peak GiB" "budget GiB"
    price_row stats-1e6-fp32 0 --preset seed --scenarios 1000000 --stats "$stats"
    price_row stats-1e6-tf32 0 --preset seed --scenarios 1000000 --stats "$stats" \
      --precision tf32
    price_row stats-1e6-basic-fp32 0 --preset seed --scenarios 1000000 --stats mean,stddev
    price_row full-1e5-devnull $((10000 * 100000 * 4)) --preset seed --scenarios 100000 \
      --stats mean --full-out /dev/null
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
