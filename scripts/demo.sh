#!/usr/bin/env bash
# The main job at reduced scale: installs, builds, starts pricerd on the cpu
# backend, prices the original example (500 issuers, 10,000 paths) over
# 20,000 of its 1,000,000 scenario columns, prints the statistics summary and
# the time and GFLOP/s, and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh > /dev/null
build_dir=${BUILD_DIR:-build}
source scripts/lib/pricerd_port.sh

log=$(mktemp)
"$build_dir/server/pricerd" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --devices cpu \
  > "$log" 2>&1 &
server=$!
# SIGTERM drains pricerd, which then exits 0; the script keeps its own status
# unless the server did not stop cleanly.
stop_server() {
  local status=$?
  if kill -TERM "$server" 2>/dev/null; then
    wait "$server" || { echo "pricerd did not stop cleanly (exit $?):" >&2; cat "$log" >&2; status=1; }
  fi
  rm -f "$log"
  exit "$status"
}
trap stop_server EXIT

port=$(pricerd_port "$log" "$server")
metrics=$(sed -n 's|.*metrics on \(http://[^ ]*\).*|\1|p' "$log")
echo "pricerd is serving on 127.0.0.1:$port (metrics: $metrics)"

"$build_dir/client/pricer" price --target "127.0.0.1:$port" --preset seed --scenarios 20000 \
  "$@"
