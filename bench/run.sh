#!/usr/bin/env bash
# The benchmarks in one command: installs what is missing, builds Release
# (scripts/build.sh), then bench/run_benchmarks.py measures everything side by
# side and writes bench-results/{results.json,throughput.png,table.txt}.
#   --repeats N   runs of each way per size, interleaved (default 3, at least 3
#                 unless --quick); the table gives the median and the minimum
#   --peers       also PyTorch (CPU) and TensorFlow, from a venv made once in
#                 bench-results/peers-venv (--peers-venv DIR; pip, about 6 GB)
#   --sizes LIST  scenario counts (default 10000,30000,100000)
#   --quick       small sizes and short load levels, to check the harness
# About 15 minutes on 2 cores, 20 with --peers; --quick in one or two.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh > /dev/null
# Debian's python3 has NumPy and matplotlib (scripts/install-deps.sh).
exec /usr/bin/python3 bench/run_benchmarks.py "$@"
