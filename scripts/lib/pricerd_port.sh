# Sourced by the scripts that start pricerd on port 0 (demo.sh, gpu-check.sh,
# bench/memory_bench.sh).
#
# pricerd_port LOG PID: prints the port pricerd logged "(port N)" in LOG,
# waiting up to 30 s; fails with the log on stderr if PID exits first or the
# time runs out.
pricerd_port() {
  local log=$1 server=$2 port=""
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$log")
    [[ -n "$port" ]] && { echo "$port"; return 0; }
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  echo "pricerd did not start:" >&2
  cat "$log" >&2
  return 1
}
