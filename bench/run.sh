#!/usr/bin/env bash
# The benchmarks in one command: installs what is missing, builds Release
# (scripts/build.sh), then bench/run_benchmarks.py measures everything side by
# side and writes bench-results/{results.json,throughput.png,table.txt}.
# About 10 minutes on 2 cores; --quick checks the harness in about one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh > /dev/null
# Debian's python3 has NumPy and matplotlib (scripts/install-deps.sh).
exec /usr/bin/python3 bench/run_benchmarks.py "$@"
