#!/usr/bin/env python3
"""Issue 30's target: the cost of one ES level's Euler contributions against
the shard GEMMs, at the original example's size (500 issuers, 10,000 paths)
on the cpu backend, side by side in one run. The same request (the seed
preset at --scenarios M, stats mean,stddev,var:0.99,es:0.975) is priced
without and with `--contributions es:0.975` (and, as a third way, with
`--sensitivities delta,vega` too), interleaved, --repeats times each, on one
pricerd; the server's own split of device thread-seconds (GEMM, statistics)
says what each adds. Runs natively (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
unset in its own commands) and, where the environment pins them, pinned too.
Prints a table and writes JSON (--out).

    bench/attribution_bench.py --build build --scenarios 100000 --repeats 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_benchmarks import Server, environments  # noqa: E402

WAYS = {
    "stats": [],
    "es contributions": ["--contributions", "es:0.975"],
    "+ delta, vega": ["--contributions", "es:0.975", "--sensitivities", "delta,vega"],
}


def measure(build, target, scenarios, flags, scratch, env):
    prefix = os.path.join(scratch, "contributions")
    command = [os.path.join(build, "client", "pricer"), "price", "--target", target,
               "--preset", "seed", "--scenarios", str(scenarios),
               "--stats", "mean,stddev,var:0.99,es:0.975", "--json"]
    if flags:
        command += flags + ["--contributions-out", prefix]
    summary = json.loads(subprocess.run(command, check=True, capture_output=True, text=True,
                                        env=env).stdout)
    for name in os.listdir(scratch):
        if name.startswith("contributions."):
            os.remove(os.path.join(scratch, name))
    return {k: summary[k] for k in ("wall_seconds", "gemm_thread_seconds",
                                    "statistics_thread_seconds")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--scenarios", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="bench-results/attribution.json")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for label, env in environments()[0].items():
            runs = {way: [] for way in WAYS}
            with Server(args.build, env=env) as server:
                for _ in range(args.repeats):
                    for way, flags in WAYS.items():
                        runs[way].append(measure(args.build, server.target, args.scenarios,
                                                 flags, scratch, env))
            results[label] = runs
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as out:
        json.dump({"scenarios": args.scenarios, "runs": results}, out, indent=1)
    print(f"{args.scenarios} columns x 10000 paths x 500 issuers, medians of {args.repeats}; "
          "thread-seconds as the server splits them")
    print(f"{'openblas':8} {'way':18} {'wall s':>8} {'GEMM':>8} {'stats':>8} "
          f"{'added / GEMM':>13}")
    for label, runs in results.items():
        def median(way, key):
            return statistics.median(r[key] for r in runs[way])
        base = median("stats", "statistics_thread_seconds")
        for way in WAYS:
            gemm = median(way, "gemm_thread_seconds")
            stats = median(way, "statistics_thread_seconds")
            added = "" if way == "stats" else f"{(stats - base) / gemm:13.1%}"
            print(f"{label:8} {way:18} {median(way, 'wall_seconds'):8.2f} {gemm:8.2f} "
                  f"{stats:8.2f} {added}")


if __name__ == "__main__":
    main()
