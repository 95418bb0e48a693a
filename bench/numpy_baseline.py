#!/usr/bin/env python3
"""What a user would write instead of calling the service: the original
example in NumPy (OpenBLAS underneath), ST @ A over column chunks plus the same
per-column statistics the service computes (mean, sample stddev, VaR and ES of
the PnL at the given levels). Prints JSON with the seconds of each part.

  numpy_baseline.py --paths 10000 --issuers 500 --scenarios 100000
                    [--chunk-columns 10000] [--var 0.99] [--es 0.975]
"""
import json
import time

import numpy as np

import baseline_args


def main():
    args = baseline_args.parse(__doc__.splitlines()[0])

    rng = np.random.default_rng(7)
    p, n, t, r = args.paths, args.issuers, args.maturity, args.rate
    start = time.perf_counter()
    spot = rng.uniform(5, 10, n).astype(np.float32)
    sigma = rng.uniform(0, 1, n).astype(np.float32)
    z = rng.standard_normal((p, n), dtype=np.float32)
    st = spot * np.exp((r - 0.5 * sigma * sigma) * t + sigma * np.sqrt(t) * z)
    st = np.asfortranarray(st, dtype=np.float32)
    model = time.perf_counter() - start

    generate = matmul = statistics = 0.0
    discount = np.exp(-r * t)
    checksum = 0.0
    for first in range(0, args.scenarios, args.chunk_columns):
        count = min(args.chunk_columns, args.scenarios - first)
        t0 = time.perf_counter()
        a = rng.random((n, count), dtype=np.float32)
        t1 = time.perf_counter()
        sc = st @ a
        t2 = time.perf_counter()
        v0 = spot.astype(np.float64) @ a.astype(np.float64)
        mean = sc.mean(axis=0, dtype=np.float64)
        stddev = sc.std(axis=0, ddof=1, dtype=np.float64)
        pnl = discount * sc - v0.astype(np.float32)
        var = -np.quantile(pnl, 1 - args.var, axis=0)
        q = np.quantile(pnl, 1 - args.es, axis=0)
        es = -np.where(pnl <= q, pnl, 0).sum(axis=0) / (pnl <= q).sum(axis=0)
        t3 = time.perf_counter()
        checksum += float(mean.sum() + stddev.sum() + var.sum() + es.sum())
        generate += t1 - t0
        matmul += t2 - t1
        statistics += t3 - t2
    total = time.perf_counter() - start
    flops = 2.0 * p * n * args.scenarios
    print(json.dumps({
        "paths": p, "issuers": n, "scenarios": args.scenarios,
        "seconds": total, "model_seconds": model, "generate_seconds": generate,
        "matmul_seconds": matmul, "statistics_seconds": statistics,
        "gflops": flops / total / 1e9, "checksum": checksum,
    }))


if __name__ == "__main__":
    main()
