#!/usr/bin/env python3
"""The numbers a user would ask for, side by side in one run (bench/run.sh).

Against a built tree (build/ by default), this starts pricerd on the cpu
backend and measures, interleaved so that the machine's noise hits every
column alike:

  * the original example (500 issuers, 10,000 paths) at several scenario
    counts, end to end through the `pricer` CLI: stats mode, full output to a
    file and to /dev/null; against one bare multi-threaded cblas_sgemm of the
    same shape (bench/bare_sgemm) and against NumPy's ST @ A plus the same
    statistics (bench/numpy_baseline.py);
  * small-request latency and throughput at 1, 4, 16 and 64 concurrent clients
    (bench/load_bench);
  * server peak RSS while streaming a full-output result over 4 GB, and the
    device peak against its budget (bench/memory_bench);
  * cpu:1 against cpu:2 on the same request (the scheduler's overhead).

Writes results.json (every raw figure), throughput.png (GFLOP/s against the
scenario count) and table.txt to the output folder, and prints the table.
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATS = "mean,stddev,var:0.99,es:0.975"
PATHS, ISSUERS = 10000, 500


def log(message):
    print(message, file=sys.stderr, flush=True)


class Server:
    """pricerd on a loopback port, for the duration of a `with` block."""

    def __init__(self, build, devices="cpu", flags=()):
        self.build, self.devices, self.flags = build, devices, list(flags)

    def __enter__(self):
        self.log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [os.path.join(self.build, "server/pricerd"), "--listen", "127.0.0.1:0", "--metrics-listen", "",
             "--devices", self.devices, *self.flags],
            stdout=self.log, stderr=subprocess.STDOUT)
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


def run_json(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def price(build, target, scenarios, *flags):
    """Wall seconds of one `pricer price` of the seed example, and the server's."""
    command = [os.path.join(build, "client/pricer"), "price", "--target", target,
               "--preset", "seed", "--scenarios", str(scenarios), *flags]
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    match = re.search(r"\(server ([\d.]+) s\)", out)
    return {"seconds": wall, "server_seconds": float(match.group(1)) if match else None}


def gflops(scenarios, seconds):
    return 2.0 * PATHS * ISSUERS * scenarios / seconds / 1e9


def end_to_end(build, sizes, repeats, scratch):
    """Per size, the best of `repeats` of each way, the ways interleaved."""
    rows = []
    with Server(build) as server:
        price(build, server.target, 2000, "--stats", STATS)  # warm-up
        for m in sizes:
            best = {}
            for r in range(repeats):
                ways = {
                    "stats": lambda: price(build, server.target, m, "--stats", STATS),
                    "full_devnull": lambda: price(build, server.target, m, "--stats", "mean",
                                                  "--full-out", "/dev/null"),
                    "full_file": lambda: price(build, server.target, m, "--stats", "mean",
                                               "--full-out", os.path.join(scratch, "sc.npy")),
                    "bare_sgemm": lambda: run_json(
                        [os.path.join(build, "bench/bare_sgemm"), "--paths", str(PATHS),
                         "--issuers", str(ISSUERS), "--scenarios", str(m)]),
                    "numpy": lambda: run_json(
                        [sys.executable, os.path.join(ROOT, "bench/numpy_baseline.py"),
                         "--paths", str(PATHS), "--issuers", str(ISSUERS),
                         "--scenarios", str(m)]),
                }
                for way, measure in ways.items():
                    log(f"  M={m} {way} (repeat {r + 1}/{repeats})")
                    result = measure()
                    if way == "full_file":
                        os.remove(os.path.join(scratch, "sc.npy"))
                    if way not in best or result["seconds"] < best[way]["seconds"]:
                        best[way] = result
            row = {"scenarios": m, "flops": 2.0 * PATHS * ISSUERS * m}
            for way, result in best.items():
                row[way] = result
                row[way]["gflops"] = gflops(m, result["seconds"])
            bare = best["bare_sgemm"]["seconds"]
            row["ratios"] = {way: best[way]["seconds"] / bare for way in best}
            rows.append(row)
    return rows


def multi_device(build, scenarios, repeats):
    """cpu:1 against cpu:2 on the same stats request, alternating."""
    best = {}
    for r in range(repeats):
        for devices in ("cpu:1", "cpu:2"):
            log(f"  {devices} (repeat {r + 1}/{repeats})")
            with Server(build, devices) as server:
                price(build, server.target, 1000, "--stats", STATS)  # warm-up
                result = price(build, server.target, scenarios, "--stats", STATS)
            if devices not in best or result["seconds"] < best[devices]["seconds"]:
                best[devices] = result
    return {"scenarios": scenarios, **best,
            "ratio_cpu2_over_cpu1": best["cpu:2"]["seconds"] / best["cpu:1"]["seconds"]}


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"bare_sgemm": "bare cblas_sgemm (no RNG, no statistics)",
              "stats": "pricer, stats mode", "full_devnull": "pricer, full SC to /dev/null",
              "full_file": "pricer, full SC to a .npy file",
              "numpy": "NumPy ST @ A + the same statistics"}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes = [row["scenarios"] for row in rows]
    for way, label in labels.items():
        ax.plot(sizes, [row[way]["gflops"] for row in rows], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("scenario columns M (P = 10,000 paths, N = 500 issuers)")
    ax.set_ylabel("GFLOP/s (2 P N M / seconds)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("The original example, end to end on " + platform.node())
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(results):
    lines = []
    lines.append("End to end, the original example (P = 10,000, N = 500); seconds "
                 "(best of %d) and ratio to the bare sgemm" % results["repeats"])
    ways = ["bare_sgemm", "stats", "full_devnull", "full_file", "numpy"]
    lines.append("%10s" % "M" + "".join("%22s" % w for w in ways))
    for row in results["end_to_end"]:
        cells = "".join("%13.2f s %5.2fx " % (row[w]["seconds"], row["ratios"][w])
                        for w in ways)
        lines.append("%10d %s" % (row["scenarios"], cells))
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
        lines.append("cpu:1 %.2f s, cpu:2 %.2f s on M = %d (ratio %.3f)" % (
            d["cpu:1"]["seconds"], d["cpu:2"]["seconds"], d["scenarios"],
            d["ratio_cpu2_over_cpu1"]))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description="pricer benchmarks, side by side")
    parser.add_argument("--build", default=os.path.join(ROOT, os.environ.get("BUILD_DIR", "build")))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench-results"))
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and short load levels, to check the harness")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    load_seconds = "5"
    if args.quick:
        sizes, load_seconds = [2000, 5000], "1"
    os.makedirs(args.out, exist_ok=True)

    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "memory_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
                    "processor": subprocess.run(
                        ["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                        capture_output=True, text=True).stdout.strip()},
        "repeats": args.repeats,
    }
    with tempfile.TemporaryDirectory(dir=args.out) as scratch:
        log("end to end")
        results["end_to_end"] = end_to_end(args.build, sizes, args.repeats, scratch)
        log("tiny requests")
        # The load tool's threads are one client to the server (one address):
        # its per-client quota must hold the 64 concurrent calls.
        with Server(args.build, flags=("--max-jobs-per-client", "64")) as server:
            results["load"] = run_to_json_file(
                [os.path.join(args.build, "bench/load_bench"), "--target", server.target,
                 "--seconds", load_seconds], scratch)
        log("memory")
        results["memory"] = run_to_json_file(
            [os.path.join(ROOT, "bench/memory_bench.sh"), "--build", args.build] +
            (["--scenarios", "5000"] if args.quick else []), scratch)
    log("multi-device")
    results["multi_device"] = multi_device(args.build, sizes[min(1, len(sizes) - 1)],
                                           args.repeats + 1)

    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    plot(results["end_to_end"], os.path.join(args.out, "throughput.png"))
    text = table(results)
    with open(os.path.join(args.out, "table.txt"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
