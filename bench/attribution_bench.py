#!/usr/bin/env python3
"""Issue 30's targets, side by side in one run on one pricerd (cpu backend):

- cost: one ES level's Euler contributions against the shard GEMMs, at the
  original example's size (500 issuers, 10,000 paths). The same request (the
  seed preset at --scenarios M, stats mean,stddev,var:0.99,es:0.975) is
  priced without and with `--contributions es:0.975` (and, as a third way,
  with `--sensitivities delta,vega` too); the server's own split of device
  thread-seconds (GEMM, statistics) says what each adds.
- streaming: contributions against full output, per byte. With as many paths
  as issuers (--stream-size S, generated issuers: 100, so that computing
  either is small beside sending it) a column's ES contributions (S float32)
  are as many bytes as its SC column, so the request with `--contributions
  es:0.975` and the same request with `--full-out` carry the same payload;
  each writes its .npy into a scratch folder, and both ask for ES 97.5% (the
  tail the contributions need), as does the third way, "es only", which
  streams neither: the differences of wall time and of the client's CPU time
  say what a byte costs.

The ways are interleaved, --repeats times each. Runs natively (OPENBLAS_CORETYPE
and OPENBLAS_L2_SIZE unset in its own commands) and, where the environment
pins them, pinned too; the bare cblas_sgemm rate of the seed shape is
recorded beside each. Prints tables and writes JSON (--out).

    bench/attribution_bench.py --build build --scenarios 100000 --repeats 3
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import run_json  # noqa: E402
from machine import environments  # noqa: E402
from run_benchmarks import Server  # noqa: E402

COST_STATS = "mean,stddev,var:0.99,es:0.975"
COST_WAYS = {
    "stats": [],
    "es contributions": ["--contributions", "es:0.975", "--contributions-out", "{prefix}"],
    "+ delta, vega": ["--contributions", "es:0.975", "--sensitivities", "delta,vega",
                      "--contributions-out", "{prefix}"],
}
STREAM_WAYS = {
    "es only": [],
    "full output": ["--full-out", "{prefix}.sc.npy"],
    "es contributions": ["--contributions", "es:0.975", "--contributions-out", "{prefix}"],
}


def measure(build, target, flags, scratch, env):
    """One `pricer price` of the seed preset with `flags` (its outputs under
    `scratch`, removed after): its --json summary's times."""
    prefix = os.path.join(scratch, "out")
    command = [os.path.join(build, "client", "pricer"), "price", "--target", target,
               "--preset", "seed", "--json"] + [f.format(prefix=prefix) for f in flags]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = json.loads(subprocess.run(command, check=True, capture_output=True, text=True,
                                        env=env).stdout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the client's (pricerd still runs)
    for name in os.listdir(scratch):
        os.remove(os.path.join(scratch, name))
    times = {k: summary[k] for k in ("wall_seconds", "gemm_thread_seconds",
                                     "statistics_thread_seconds")}
    times["client_cpu_seconds"] = (after.ru_utime - before.ru_utime +
                                   after.ru_stime - before.ru_stime)
    return times


def bare_sgemm(build, columns, env):
    """GFLOP/s of one cblas_sgemm of the seed shape (10,000 x 500 x columns)."""
    return run_json([os.path.join(build, "bench", "bare_sgemm"), "--paths", "10000",
                     "--issuers", "500", "--scenarios", str(columns)], env)["gflops"]


def run_ways(build, ways, repeats, scratch, env):
    runs = {way: [] for way in ways}
    with Server(build, env=env) as server:
        for _ in range(repeats):
            for way, flags in ways.items():
                runs[way].append(measure(build, server.target, flags, scratch, env))
    return runs


def median(runs, way, key):
    return statistics.median(r[key] for r in runs[way])


def print_cost(args, results):
    print(f"cost: {args.scenarios} columns x 10000 paths x 500 issuers, medians of "
          f"{args.repeats}; thread-seconds as the server splits them")
    print(f"{'openblas':8} {'sgemm GF/s':>10} {'way':18} {'wall s':>8} {'GEMM':>8} "
          f"{'stats':>8} {'added / GEMM':>13}")
    for label, result in results.items():
        runs = result["cost"]
        base = median(runs, "stats", "statistics_thread_seconds")
        for way in COST_WAYS:
            gemm = median(runs, way, "gemm_thread_seconds")
            stats = median(runs, way, "statistics_thread_seconds")
            added = "" if way == "stats" else f"{(stats - base) / gemm:13.1%}"
            print(f"{label:8} {result['sgemm_gflops']:10.0f} {way:18} "
                  f"{median(runs, way, 'wall_seconds'):8.2f} {gemm:8.2f} {stats:8.2f} {added}")


def print_stream(args, results):
    payload = 4.0 * args.stream_size * args.stream_scenarios
    print(f"\nstreaming: {args.stream_scenarios} columns x {args.stream_size} paths x "
          f"{args.stream_size} issuers, {payload / 1e6:.0f} MB of float32 payload either way, "
          f"medians of {args.repeats}")
    threads = os.cpu_count()
    print(f"added: over 'es only'; server stats: the server's statistics thread-seconds (the "
          f"contributions' sums are counted there); net: the added wall time less the added "
          f"statistics thread-seconds spread over the server's {threads} threads")
    print(f"{'openblas':8} {'way':18} {'wall s':>8} {'MB/s':>6} {'added s/GB':>10} "
          f"{'net s/GB':>8} {'client CPU s/GB':>15} {'server stats s':>14}")
    gb = payload / 1e9
    for label, result in results.items():
        runs = result["stream"]
        base = {key: median(runs, "es only", key)
                for key in ("wall_seconds", "client_cpu_seconds", "statistics_thread_seconds")}
        added = {}
        for way in STREAM_WAYS:
            wall, cpu, stats = (median(runs, way, key) for key in (
                "wall_seconds", "client_cpu_seconds", "statistics_thread_seconds"))
            wall_added = wall - base["wall_seconds"]
            compute = (stats - base["statistics_thread_seconds"]) / threads
            added[way] = {"wall": wall_added / gb, "net": (wall_added - compute) / gb,
                          "client": (cpu - base["client_cpu_seconds"]) / gb}
            rate = "" if way == "es only" else f"{payload / 1e6 / wall:6.0f}"
            print(f"{label:8} {way:18} {wall:8.2f} {rate:>6} {added[way]['wall']:10.2f} "
                  f"{added[way]['net']:8.2f} {added[way]['client']:15.2f} {stats:14.2f}")
        result["per_byte_vs_full"] = {
            key: added["es contributions"][key] / added["full output"][key]
            for key in ("wall", "net", "client")}
        ratios = result["per_byte_vs_full"]
        print(f"{label:8} contributions / full output per byte: added wall {ratios['wall']:.2f}, "
              f"net {ratios['net']:.2f}, client CPU {ratios['client']:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--scenarios", type=int, default=100000)
    parser.add_argument("--stream-scenarios", type=int, default=2000000)
    parser.add_argument("--stream-size", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="bench-results/attribution.json")
    args = parser.parse_args()
    cost = {way: [f"--scenarios={args.scenarios}", "--stats", COST_STATS] + flags
            for way, flags in COST_WAYS.items()}
    stream = {way: [f"--scenarios={args.stream_scenarios}", f"--paths={args.stream_size}",
                    f"--issuers={args.stream_size}", "--stats", "es:0.975"] + flags
              for way, flags in STREAM_WAYS.items()}
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for label, env in environments()[0].items():
            results[label] = {"sgemm_gflops": bare_sgemm(args.build, 20000, env),
                              "cost": run_ways(args.build, cost, args.repeats, scratch, env),
                              "stream": run_ways(args.build, stream, args.repeats, scratch, env)}
    print_cost(args, results)
    print_stream(args, results)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as out:
        json.dump({"scenarios": args.scenarios, "stream_scenarios": args.stream_scenarios,
                   "stream_size": args.stream_size, "results": results}, out, indent=1)


if __name__ == "__main__":
    main()
