#!/usr/bin/env bash
# The server's memory while it streams a full-output result larger than 4 GB
# (DESIGN.md target: pricerd's RSS under 1 GiB). Starts pricerd on the cpu
# backend as its own process, runs
#   pricer price --preset seed --scenarios 110000 --stats mean --full-out FILE
# (SC = 10,000 paths x 110,000 columns x 4 bytes = 4.4 GB), samples the
# server's VmRSS from /proc every 50 ms, reads its VmHWM at the end, and asks
# `pricer devices --json` for the device peak against its budget.
#
#   bench/memory_bench.sh [--build build] [--scenarios 110000] [--out FILE] [--json FILE]
#
# --out is where the CLI writes SC: /dev/null by default, or a file (deleted
# at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/pricerd_port.sh

build=build
scenarios=110000
out=""
json=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--scenarios M] [--out FILE] [--json FILE]" >&2; exit 2 ;;
  esac
done
paths=10000  # the seed preset's
sc_bytes=$((paths * scenarios * 4))

work=$(mktemp -d)
[[ -n "$out" ]] || out=/dev/null
log="$work/pricerd.log"
samples="$work/rss"
server=""
sampler=""
cleanup() {
  set +e
  [[ -n "$sampler" ]] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  [[ -f "$out" ]] && rm -f "$out" "$out.progress"
  rm -rf "$work"
}
trap cleanup EXIT

"$build/server/pricerd" --listen 127.0.0.1:0 --metrics-listen "" --devices cpu > "$log" 2>&1 &
server=$!
port=$(pricerd_port "$log" "$server")
target="127.0.0.1:$port"

# kB lines of VmRSS, one per 50 ms, while the server lives.
status_kb() {
  local key value rest
  while read -r key value rest; do
    [[ "$key" == "$1:" ]] && { echo "$value"; return; }
  done < "/proc/$server/status"
}
(
  while kill -0 "$server" 2>/dev/null; do
    status_kb VmRSS >> "$samples" || true
    sleep 0.05
  done
) &
sampler=$!

start=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$work/client_kb" "$build/client/pricer" price --target "$target" \
  --preset seed --scenarios "$scenarios" --stats mean --full-out "$out" > "$work/client.log"
end=$(date +%s.%N)
hwm_kb=$(status_kb VmHWM)
kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
sampler=""
"$build/client/pricer" devices --target "$target" --json > "$work/devices.json"

python3 - "$sc_bytes" "$start" "$end" "$samples" "$hwm_kb" "$work/client_kb" \
  "$work/devices.json" "$(nproc)" "$json" <<'EOF'
import json, sys
sc_bytes, start, end, samples, hwm_kb, client_kb, devices, cores, out = sys.argv[1:]
rss = [int(line) for line in open(samples) if line.strip()]
reply = json.load(open(devices))
mib = 1 << 20
result = {
    "sc_bytes": int(sc_bytes),
    "wall_seconds": float(end) - float(start),
    "server_peak_rss_mib": max(rss) * 1024 / mib,
    "server_vm_hwm_mib": int(hwm_kb) * 1024 / mib,
    "rss_samples": len(rss),
    "client_max_rss_mib": int(open(client_kb).read().split()[-1]) * 1024 / mib,
    "devices": [{"name": d["name"], "peak_bytes": int(d["peakBytes"]),
                 "memory_budget_bytes": int(d["memoryBudgetBytes"])}
                for d in reply["devices"]],
    "cores": int(cores),
}
print(f"SC {result['sc_bytes'] / 1e9:.2f} GB ({result['sc_bytes']:,} bytes) streamed in "
      f"{result['wall_seconds']:.1f} s ({result['sc_bytes'] / result['wall_seconds'] / 1e9:.2f} GB/s), "
      f"{result['cores']} cores")
print(f"server peak RSS {result['server_peak_rss_mib']:.0f} MiB "
      f"(max of {len(rss)} samples, 50 ms apart); VmHWM {result['server_vm_hwm_mib']:.0f} MiB; "
      f"target < 1024 MiB")
print(f"client max RSS {result['client_max_rss_mib']:.0f} MiB")
for d in result["devices"]:
    print(f"device {d['name']}: peak {d['peak_bytes'] / mib:.0f} MiB of a "
          f"{d['memory_budget_bytes'] / mib:.0f} MiB budget")
if out:
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
EOF
