#!/usr/bin/env python3
"""The numbers a user would ask for, side by side in one run (bench/run.sh).

Against a built tree (build/ by default), this starts pricerd on the cpu
backend and measures, interleaved so that the machine's noise hits every
column alike:

  * the original example (500 issuers, 10,000 paths) at several scenario
    counts, end to end through the `pricer` CLI: stats mode, full output to a
    file and to /dev/null, through the socket and through a shared-memory ring
    (`--shared-memory`: shm_devnull, shm_file), and by the Python client into an
    array, through the socket and the ring (bench/python_client_full.py:
    python_full, python_shm); against one bare multi-threaded cblas_sgemm of the
    same shape (bench/bare_sgemm) and against NumPy's ST @ A plus the same
    statistics (bench/numpy_baseline.py); with --peers also PyTorch on the CPU
    (bench/torch_baseline.py --device cpu) and the original question's
    TensorFlow graph (bench/tf_baseline.py), from a venv of their own
    (bench/peers.py). Each way runs --repeats times (3 at least), round-robin
    over the ways within each repeat; the median is the headline, the minimum
    beside it; the speed-up over each peer is set against the bare sgemm's;
    each run's CPU seconds, its own processes' and the server's
    (bench/cpu_time.py), against the bare GEMM's thread-seconds;
  * small-request latency and throughput at 1, 4, 16 and 64 concurrent clients
    (bench/load_bench);
  * server peak RSS while streaming a full-output result over 4 GB, and the
    device peak against its budget (bench/memory_bench);
  * cpu:1 against cpu:2 on the same request (the scheduler's overhead).

The end-to-end ways run twice when this machine's environment pins
OpenBLAS's kernels (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE: these machines pin
AVX2 on an AVX-512 processor): natively, those variables unset in the
benchmark's own commands only (what a user's machine runs, and the headline),
then as the environment pins them. Each pass records the kernel OpenBLAS
chose (OPENBLAS_VERBOSE=2) and the bare rate its ratios are to, and the table
names the processor's arithmetic limit beside them.

Writes results.json (every raw figure), throughput.png (GFLOP/s against the
scenario count) and table.txt to the output folder, and prints the table.
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

import cpu_time
import peers
from machine import arithmetic_limit, environments, openblas_core

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATS = "mean,stddev,var:0.99,es:0.975"
PATHS, ISSUERS = 10000, 500
WAYS = ("bare_sgemm", "stats", "full_devnull", "full_file", "shm_devnull", "shm_file",
        "python_full", "python_shm", "numpy") + tuple(peers.LABELS)
run_json = peers.run_json
def log(message):
    print(message, file=sys.stderr, flush=True)


class Server:
    """pricerd on a loopback port, for the duration of a `with` block."""

    def __init__(self, build, devices="cpu", flags=(), env=None):
        self.build, self.devices, self.flags, self.env = build, devices, list(flags), env

    def __enter__(self):
        self.log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [os.path.join(self.build, "server/pricerd"), "--listen", "127.0.0.1:0", "--metrics-listen", "",
             "--devices", self.devices, *self.flags],
            stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.time() + 30
        while time.time() < deadline:
            self.log.seek(0)
            match = re.search(r"\(port (\d+)\)", self.log.read())
            if match:
                self.target = "127.0.0.1:" + match.group(1)
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.log.seek(0)
        raise RuntimeError("pricerd did not start:\n" + self.log.read())

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def run_to_json_file(command, scratch):
    """Runs a tool that writes its figures with --json FILE, and reads them."""
    path = os.path.join(scratch, "figures.json")
    subprocess.run(command + ["--json", path], check=True, capture_output=True, text=True)
    with open(path) as f:
        return json.load(f)


def price(build, target, scenarios, *flags):
    """Wall seconds of one `pricer price` of the seed example, and the server's."""
    command = [os.path.join(build, "client/pricer"), "price", "--target", target,
               "--preset", "seed", "--scenarios", str(scenarios), *flags]
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    match = re.search(r"\(server ([\d.]+) s\)", out)
    return {"seconds": wall, "server_seconds": float(match.group(1)) if match else None}


def price_to_file(build, target, scenarios, path, *flags):
    result = price(build, target, scenarios, "--stats", "mean", "--full-out", path, *flags)
    os.remove(path)
    return result


def gflops(scenarios, seconds):
    return 2.0 * PATHS * ISSUERS * scenarios / seconds / 1e9


def summarize(runs, scenarios):
    """Every run of one way at one size, its raw seconds, their median and minimum."""
    seconds = [run["seconds"] for run in runs]
    median, low = statistics.median(seconds), min(seconds)
    return {"runs": runs, "seconds": seconds, "median_seconds": median, "min_seconds": low,
            "median_gflops": gflops(scenarios, median), "max_gflops": gflops(scenarios, low)}


def ways_at(build, target, m, scratch, peer_python, env):
    """The ways at M scenario columns, in the order each repeat runs them; the
    baselines under `env` (the server was started under it)."""
    shape = ["--paths", str(PATHS), "--issuers", str(ISSUERS), "--scenarios", str(m)]
    python_full = [sys.executable, os.path.join(ROOT, "bench/python_client_full.py"),
                   "--target", target, "--scenarios", str(m)]
    ways = {
        "stats": lambda: price(build, target, m, "--stats", STATS),
        "full_devnull": lambda: price(build, target, m, "--stats", "mean",
                                      "--full-out", "/dev/null"),
        "full_file": lambda: price_to_file(build, target, m, os.path.join(scratch, "sc.npy")),
        "shm_devnull": lambda: price(build, target, m, "--stats", "mean", "--full-out",
                                     "/dev/null", "--shared-memory"),
        "shm_file": lambda: price_to_file(build, target, m, os.path.join(scratch, "sc.npy"),
                                          "--shared-memory"),
        "python_full": lambda: run_json(python_full, env),
        "python_shm": lambda: run_json(python_full + ["--shared-memory"], env),
        "bare_sgemm": lambda: run_json([os.path.join(build, "bench/bare_sgemm"), *shape], env),
        "numpy": lambda: run_json([sys.executable,
                                   os.path.join(ROOT, "bench/numpy_baseline.py"), *shape], env),
    }
    if peer_python:
        ways.update(peers.ways(peer_python, PATHS, ISSUERS, m, env))
    return ways


def size_row(m, runs):
    """One size's figures: each way summarised, its ratios to the bare sgemm
    (median to median, min to min) and the speed-ups over the peers."""
    row = {"scenarios": m, "flops": 2.0 * PATHS * ISSUERS * m}
    for way, results in runs.items():
        row[way] = summarize(results, m)
        row[way]["cpu"] = cpu_time.medians(results)
    row["ratios"] = {figure: {way: row[way][figure + "_seconds"] /
                              row["bare_sgemm"][figure + "_seconds"] for way in runs}
                     for figure in ("median", "min")}
    # Each repeat's run over the bare sgemm's of the same repeat, a minute
    # apart at most: the machine's slower drifts cancel in it.
    bare = row["bare_sgemm"]["seconds"]
    row["ratios"]["paired"] = {way: statistics.median(
        s / b for s, b in zip(row[way]["seconds"], bare)) for way in runs}
    row["speedups"] = peers.speedups(row)
    return row


def end_to_end(build, sizes, repeats, scratch, peer_python, env):
    """Per size, `repeats` runs of each way under `env`, round-robin over the ways."""
    rows = []
    with Server(build, flags=["--shared-memory-output"], env=env) as server:
        price(build, server.target, 2000, "--stats", STATS)  # warm-up
        for m in sizes:
            ways = ways_at(build, server.target, m, scratch, peer_python, env)
            runs = {way: [] for way in ways}
            for r in range(repeats):
                for way, measure in ways.items():
                    log(f"  M={m} {way} (repeat {r + 1}/{repeats})")
                    runs[way].append(cpu_time.measure(measure, server.process.pid))
            rows.append(size_row(m, runs))
    return rows


def multi_device(build, scenarios, repeats):
    """cpu:1 against cpu:2 on the same stats request, alternating."""
    runs = {"cpu:1": [], "cpu:2": []}
    for r in range(repeats):
        for devices in runs:
            log(f"  {devices} (repeat {r + 1}/{repeats})")
            with Server(build, devices) as server:
                price(build, server.target, 1000, "--stats", STATS)  # warm-up
                runs[devices].append(price(build, server.target, scenarios, "--stats", STATS))
    out = {"scenarios": scenarios}
    out.update((devices, summarize(results, scenarios)) for devices, results in runs.items())
    out["ratio_cpu2_over_cpu1"] = {
        figure: out["cpu:2"][figure + "_seconds"] / out["cpu:1"][figure + "_seconds"]
        for figure in ("median", "min")}
    return out


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"bare_sgemm": "bare cblas_sgemm (no RNG, no statistics)",
              "stats": "pricer, stats mode", "full_devnull": "pricer, full SC to /dev/null",
              "full_file": "pricer, full SC to a .npy file",
              "shm_devnull": "pricer, full SC through shared memory to /dev/null",
              "shm_file": "pricer, full SC through shared memory to a .npy file",
              "python_full": "Python client, full SC into an array",
              "python_shm": "Python client, full SC through shared memory into an array",
              "numpy": "NumPy ST @ A + the same statistics", **peers.LABELS}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes = [row["scenarios"] for row in rows]
    for way, label in labels.items():
        if way in rows[0]:
            ax.plot(sizes, [row[way]["median_gflops"] for row in rows], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("scenario columns M (P = 10,000 paths, N = 500 issuers)")
    ax.set_ylabel("GFLOP/s (2 P N M / median seconds)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("The original example, end to end on " + platform.node())
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def end_to_end_table(results, key="end_to_end"):
    rows = results[key]
    rates = ", ".join("%.1f GFLOP/s at M = %s" % (row["bare_sgemm"]["median_gflops"],
                                                  format(row["scenarios"], ",")) for row in rows)
    limit = results["arithmetic_limit"]
    run = results["environments"][key]
    lines = ["End to end, the original example (P = 10,000, N = 500), %s: %s. OpenBLAS kernel %s "
             "(NumPy's %s). Bare cblas_sgemm (median): %s; every ratio below is to it. The "
             "processor's limit: about %.0f GFLOP/s (%d cores x 2 FMA x %d lanes x 2 x %.0f MHz, the "
             "nominal clock: a boost clock gives more)" % (
                 run["name"], run["setting"], run["core"]["openblas"], run["core"]["numpy"], rates,
                 limit["gflops"], limit["cores"], limit["lanes"], limit["mhz"]),
             peers.versions_line(results),
             "Seconds: median and min of %d runs of each way, the ways interleaved; x bare: "
             "median over the bare median, min over the bare min, and paired: the median of "
             "each repeat's run over the same repeat's bare run" % results["repeats"],
             "%10s  %-14s %9s %9s %8s %11s %8s %9s" % ("M", "way", "median s", "min s", "x bare",
                                                       "x bare min", "paired", "GFLOP/s")]
    for row in rows:
        for way in (w for w in WAYS if w in row):
            lines.append("%10d  %-14s %9.2f %9.2f %8.2f %11.2f %8.2f %9.1f" % (
                row["scenarios"], way, row[way]["median_seconds"], row[way]["min_seconds"],
                row["ratios"]["median"][way], row["ratios"]["min"][way],
                row["ratios"]["paired"][way], row[way]["median_gflops"]))
    return lines + peers.speedup_table(rows) + cpu_time.table(rows, WAYS)


def table(results):
    lines = end_to_end_table(results)
    if "end_to_end_pinned" in results:
        lines.append("")
        lines += end_to_end_table(results, "end_to_end_pinned")
    if "load" in results:
        lines.append("")
        lines.append("Tiny requests (10 issuers, 1,000 paths, 100 scenarios)")
        lines.append("%12s %10s %10s %9s %9s %9s" % ("concurrency", "requests/s", "calls",
                                                    "p50 ms", "p90 ms", "p99 ms"))
        for level in results["load"]:
            lines.append("%12d %10.0f %10d %9.2f %9.2f %9.2f" % (
                level["concurrency"], level["requests_per_second"], level["calls"],
                level["p50_ms"], level["p90_ms"], level["p99_ms"]))
    if "memory" in results:
        m = results["memory"]
        d = m["devices"][0]
        lines.append("")
        lines.append("Memory while streaming %.1f GB of SC to /dev/null in %.1f s: server peak RSS "
                     "%.0f MiB (target < 1024); device %s peak %.0f MiB of a %.0f MiB budget" % (
                         m["sc_bytes"] / 1e9, m["wall_seconds"], m["server_peak_rss_mib"],
                         d["name"], d["peak_bytes"] / 2**20, d["memory_budget_bytes"] / 2**20))
    if "multi_device" in results:
        d = results["multi_device"]
        lines.append("")
        lines.append("cpu:1 %.2f s (min %.2f), cpu:2 %.2f s (min %.2f) on M = %d: ratio %.3f "
                     "(medians), %.3f (mins)" % (
                         d["cpu:1"]["median_seconds"], d["cpu:1"]["min_seconds"],
                         d["cpu:2"]["median_seconds"], d["cpu:2"]["min_seconds"],
                         d["scenarios"], d["ratio_cpu2_over_cpu1"]["median"],
                         d["ratio_cpu2_over_cpu1"]["min"]))
    return "\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(description="pricer benchmarks, side by side")
    parser.add_argument("--build", default=os.path.join(ROOT, os.environ.get("BUILD_DIR", "build")))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench-results"))
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each way per size (3 at least, unless --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and short load levels, to check the harness")
    parser.add_argument("--peers", action="store_true",
                        help="also PyTorch (CPU) and TensorFlow, from a venv made once")
    parser.add_argument("--peers-venv", default=os.path.join(ROOT, "bench-results", "peers-venv"),
                        help="the peers' virtual environment (made there if missing)")
    args = parser.parse_args()
    if args.repeats < (1 if args.quick else 3):
        parser.error("--repeats must be 3 or more (a median of fewer is no median), "
                     "or 1 or more with --quick")
    args.sizes = [2000, 5000] if args.quick else [int(s) for s in args.sizes.split(",")]
    return args


def machine():
    import numpy
    return {"host": platform.node(), "cpus": os.cpu_count(),
            "memory_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
            "processor": subprocess.run(
                ["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                capture_output=True, text=True).stdout.strip()}, numpy.__version__


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "repeats": args.repeats, "target_kept": peers.TARGET_KEPT,
    }
    results["machine"], results["numpy_version"] = machine()
    peer_python = None
    if args.peers:
        peer_python = peers.ensure_venv(os.path.abspath(args.peers_venv))
        results["peers"] = dict(peers.versions(peer_python), venv=os.path.abspath(args.peers_venv))
        log("peers: " + peers.versions_line(results))
    results["arithmetic_limit"] = arithmetic_limit()
    envs, pins = environments()
    results["environments"] = {}
    with tempfile.TemporaryDirectory(dir=args.out) as scratch:
        for name, env in envs.items():
            key = "end_to_end" if name == "native" else "end_to_end_" + name
            setting = ("the pin variables unset (%s)" % ", ".join(pins) if pins and
                       name == "native" else ", ".join("%s=%s" % kv for kv in pins.items())
                       if name == "pinned" else "nothing pinned")
            results["environments"][key] = {"name": name, "setting": setting,
                                            "core": openblas_core(args.build, env)}
            log("end to end, %s: %s" % (name, setting))
            results[key] = end_to_end(args.build, args.sizes, args.repeats, scratch, peer_python,
                                      env)
        log("tiny requests")
        # The load tool's threads are one client to the server (one address):
        # its per-client quota must hold the 64 concurrent calls.
        with Server(args.build, flags=("--max-jobs-per-client", "64")) as server:
            results["load"] = run_to_json_file(
                [os.path.join(args.build, "bench/load_bench"), "--target", server.target,
                 "--seconds", "1" if args.quick else "5"], scratch)
        log("memory")
        results["memory"] = run_to_json_file(
            [os.path.join(ROOT, "bench/memory_bench.sh"), "--build", args.build] +
            (["--scenarios", "5000"] if args.quick else []), scratch)
    log("multi-device")
    results["multi_device"] = multi_device(args.build, args.sizes[min(1, len(args.sizes) - 1)],
                                           args.repeats)
    write(results, args.out)


def write(results, out):
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    plot(results["end_to_end"], os.path.join(out, "throughput.png"))
    text = table(results)
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
