#!/usr/bin/env python3
"""The TensorFlow baseline of the benchmarks: the approach of the original
question on the CPU. A tf.compat.v1 graph builds ST by GBM from tf.random, then
A in column shards (each drawn in the graph by tf.random.uniform), a
tf.matmul(ST, A_shard) per shard, the shards chained by
tf.control_dependencies so that they run one after another (one shard's SC in
memory at a time), and per shard the same statistics the service computes:
mean, sample stddev, VaR (NumPy's "linear" quantile from tf.math.top_k of
-PnL) and ES (the mean of the tail) of the PnL = exp(-rT) SC - V0. Run in a
tf.compat.v1.Session; only its run is timed, after a one-shard warm-up graph.
Prints JSON on its last line with the seconds.

  tf_baseline.py --paths 10000 --issuers 500 --scenarios 100000
                 [--chunk-columns 10000] [--var 0.99] [--es 0.975]
"""
import json
import math
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before the import: no oneDNN notices

import numpy as np  # noqa: E402

import baseline_args  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1




def lower_quantiles(pnl, levels):
    """NumPy's "linear" quantiles of each column of `pnl` (P x C) at the small
    `levels` (C each), and the smallest values per column, ascending (C x k):
    h = (P - 1) q, k = floor(h), q = s[k] + (h - k) (s[k + 1] - s[k])."""
    p = int(pnl.shape[0])
    spots = [((p - 1) * q, math.floor((p - 1) * q)) for q in levels]
    count = min(p, max(k for _, k in spots) + 2)
    smallest = -tf.math.top_k(tf.transpose(-pnl), k=count, sorted=True).values
    quantiles = []
    for h, k in spots:
        low, high = smallest[:, k], smallest[:, min(k + 1, p - 1)]
        quantiles.append(low + (h - k) * (high - low))
    return quantiles, smallest


def shard_statistics(st, spot, count, args):
    """One shard: A (N x count) drawn in the graph, SC = ST A, and its
    statistics (4 x count: mean, stddev, VaR, ES)."""
    p = int(st.shape[0])
    a = tf.random.uniform([args.issuers, count], 0, 1, dtype=tf.float32)
    sc = tf.matmul(st, a)
    v0 = tf.cast(tf.linalg.matvec(tf.cast(a, tf.float64), tf.cast(spot, tf.float64),
                                  transpose_a=True), tf.float32)
    pnl = math.exp(-args.rate * args.maturity) * sc - v0
    mean = tf.reduce_mean(sc, axis=0)
    stddev = tf.math.reduce_std(sc, axis=0) * math.sqrt(p / (p - 1))
    (var, es_level), smallest = lower_quantiles(pnl, [1 - args.var, 1 - args.es])
    tail = tf.cast(smallest <= es_level[:, None], tf.float32)
    es = -tf.reduce_sum(smallest * tail, axis=1) / tf.reduce_sum(tail, axis=1)
    return tf.stack([mean, stddev, -var, es])


def build(scenarios, args):
    """The graph: ST, then the shards in sequence; returns the shards' statistics."""
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(42)
        n, p, t = args.issuers, args.paths, args.maturity
        sigma = tf.random.uniform([n], 0, 1)
        spot = tf.random.uniform([n], 5, 10)
        z = tf.random.normal([n, p], dtype=tf.float32)
        st = spot * tf.exp((args.rate - tf.square(sigma) / 2) * t
                           + sigma * tf.transpose(z) * math.sqrt(t))
        outputs = []
        for first in range(0, scenarios, args.chunk_columns):
            count = min(args.chunk_columns, scenarios - first)
            with tf.control_dependencies(outputs[-1:]):
                outputs.append(shard_statistics(st, spot, count, args))
    return graph, outputs


def run(scenarios, args):
    """Builds the graph and runs it once in a session; (seconds of the run, statistics)."""
    graph, outputs = build(scenarios, args)
    threads = os.cpu_count()
    config = tf1.ConfigProto(intra_op_parallelism_threads=threads,
                             inter_op_parallelism_threads=threads)
    with tf1.Session(graph=graph, config=config) as session:
        start = time.perf_counter()
        statistics = session.run(outputs)
        return time.perf_counter() - start, statistics


def main():
    args = baseline_args.parse(__doc__.splitlines()[0])
    tf1.disable_eager_execution()
    run(min(args.scenarios, 1000), args)  # warm-up: kernels and thread pools
    seconds, statistics = run(args.scenarios, args)
    flops = 2.0 * args.paths * args.issuers * args.scenarios
    print(json.dumps({
        "paths": args.paths, "issuers": args.issuers, "scenarios": args.scenarios,
        "chunk_columns": args.chunk_columns, "seconds": seconds,
        "gflops": flops / seconds / 1e9,
        "checksum": float(sum(np.asarray(s, dtype=np.float64).sum() for s in statistics)),
        "tensorflow": tf.__version__, "threads": os.cpu_count(),
    }))


if __name__ == "__main__":
    main()
