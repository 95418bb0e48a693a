#!/usr/bin/env python3
"""Compares what two servers priced for the same request (scripts/gpu-check.sh:
the GPU's results against the cpu backend's), and exits 1 when they differ by
more than the tolerance.

  compare_results.py stats GPU.csv CPU.csv --tolerance T
      the `pricer price --stats-out` CSVs: every value of every column within
      T of its scale: |mean| for mean, stddev, min, max and quantiles (the
      values' own size), |V0| for V0, VaR and ES (differences of V0 and a
      discounted statistic); standard errors (_se) within 100 T of their own
      value, interval bounds (_lo, _hi) within max(100 T, 1e-2) of the scale (a
      count one higher on one side moves a bound by one order statistic)
  compare_results.py npy GPU.npy CPU.npy --tolerance T
      two float32 .npy matrices (`--full-out`, `--prices-out`) of one shape:
      ||GPU - CPU|| / ||CPU|| (Frobenius) within T, and no value NaN

Prints one line: the largest error over its tolerance (<= 1 passes) and where.
The standard library suffices (the npy files are then read in blocks with
`array`); NumPy, where it is installed, does the same sums faster.
"""
import argparse
import array
import ast
import csv
import math
import sys


def scale_of(name, row):
    if name == "v0" or name.startswith(("var_", "es_")):
        return abs(row["v0"])
    if "mean" in row:
        return abs(row["mean"])
    return abs(row[name])


def compare_stats(gpu_path, cpu_path, tolerance):
    def read(path):
        with open(path, newline="") as f:
            return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]

    gpu, cpu = read(gpu_path), read(cpu_path)
    if len(gpu) != len(cpu) or not cpu or gpu[0].keys() != cpu[0].keys():
        return math.inf, f"shapes differ: {len(gpu)} and {len(cpu)} rows"
    worst, where = 0.0, ""
    for g, c in zip(gpu, cpu):
        if g["column"] != c["column"]:
            return math.inf, f"column {g['column']} against {c['column']}"
        for name in c:
            if name == "column":
                continue
            if math.isnan(g[name]):
                return math.inf, f"{name} of column {int(c['column'])} is NaN"
            base = name.rsplit("_", 1)[0]
            if name.endswith("_se"):
                allowed = 100 * tolerance * abs(c[name])
            elif name.endswith(("_lo", "_hi")):
                allowed = max(100 * tolerance, 1e-2) * scale_of(base, c)
            else:
                allowed = tolerance * scale_of(name, c)
            error = abs(g[name] - c[name]) / allowed if allowed > 0 else (
                0.0 if g[name] == c[name] else math.inf)
            if error > worst:
                worst = error
                where = (f"{name} of column {int(c['column'])}: {g[name]!r} against {c[name]!r}")
    return worst, where


def npy_header(f):
    magic = f.read(6)
    if magic != b"\x93NUMPY":
        raise ValueError("not a .npy file")
    major = f.read(2)[0]
    length_bytes = 2 if major == 1 else 4
    length = int.from_bytes(f.read(length_bytes), "little")
    header = ast.literal_eval(f.read(length).decode("latin1"))
    return header


def compare_npy(gpu_path, cpu_path, tolerance):
    with open(gpu_path, "rb") as g, open(cpu_path, "rb") as c:
        hg, hc = npy_header(g), npy_header(c)
        if hg["shape"] != hc["shape"] or hg["descr"] != "<f4" or hc["descr"] != "<f4":
            return math.inf, f"headers differ or not float32: {hg} and {hc}"
        difference = reference = 0.0
        block = 1 << 22  # floats
        try:
            import numpy
        except ImportError:
            numpy = None
        while numpy is not None:
            a = numpy.frombuffer(g.read(4 * block), dtype="<f4").astype(numpy.float64)
            b = numpy.frombuffer(c.read(4 * block), dtype="<f4").astype(numpy.float64)
            if a.size != b.size:
                return math.inf, "the files have different lengths"
            if a.size == 0:
                break
            if numpy.isnan(a).any():
                return math.inf, "a value is NaN"
            difference += float(((a - b) ** 2).sum())
            reference += float((b * b).sum())
        while numpy is None:
            a, b = array.array("f"), array.array("f")
            try:
                a.frombytes(g.read(4 * block))
                b.frombytes(c.read(4 * block))
            except ValueError:
                return math.inf, "a file ends inside a value"
            if len(a) != len(b):
                return math.inf, "the files have different lengths"
            if not a:
                break
            for x, y in zip(a, b):
                if x != x:
                    return math.inf, "a value is NaN"
                difference += (x - y) * (x - y)
                reference += y * y
    if reference == 0:
        return (0.0 if difference == 0 else math.inf), "the reference is all zeros"
    relative = math.sqrt(difference / reference)
    return relative / tolerance, f"||GPU - CPU|| / ||CPU|| = {relative:.3g}, shape {hc['shape']}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["stats", "npy"])
    parser.add_argument("gpu")
    parser.add_argument("cpu")
    parser.add_argument("--tolerance", type=float, required=True)
    args = parser.parse_args()
    compare = compare_stats if args.kind == "stats" else compare_npy
    worst, where = compare(args.gpu, args.cpu, args.tolerance)
    verdict = "ok" if worst <= 1 else "DIFFERS"
    print(f"{worst:8.3f}  {verdict}  {where}")
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
