"""The original example at reduced scale from Python: VaR and expected
shortfall per scenario column, and the full SC of a few columns.

    PYTHONPATH=client/python:build/client/python \\
        python3 client/python/examples/price_seed.py --target localhost:50051
"""

import argparse

import numpy as np

from pricer.v1 import client_protocol_pb2
from pricer_client import Client

# The original example's market and model (`pricer price --preset seed`).
SEED = client_protocol_pb2.SeedPreset()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default=client_protocol_pb2.ChannelSettings().default_target)
    parser.add_argument("--scenarios", type=int, default=20_000)
    parser.add_argument("--paths", type=int, default=SEED.paths)
    args = parser.parse_args()

    with Client(args.target) as client:
        model = dict(issuers=SEED.issuers, paths=args.paths, seed=SEED.seed, rate=SEED.rate,
                     maturity=SEED.maturity)
        result = client.price(**model, scenarios=args.scenarios,
                              statistics=["mean", "stddev", "var:0.99", "es:0.99"])
        stats = result.statistics
        worst = int(np.argmax(stats["var_0.99"]))
        print(f"{args.scenarios} scenarios x {args.paths} paths in {result.elapsed_seconds:.2f} s "
              f"({result.flops / result.elapsed_seconds / 1e9:.1f} GFLOP/s)")
        print(f"average V0 {stats['v0'].mean():.2f}, average 99% VaR {stats['var_0.99'].mean():.2f}, "
              f"average 99% ES {stats['es_0.99'].mean():.2f}")
        print(f"largest 99% VaR: column {worst}, {stats['var_0.99'][worst]:.2f} "
              f"(V0 {stats['v0'][worst]:.2f})")
        few = client.price(**model, scenarios=args.scenarios, column_begin=worst,
                           column_end=worst + 1, statistics=None, full=True)
        print(f"SC of column {worst}: {few.full.shape[0]} paths, "
              f"5% quantile {np.quantile(few.full[:, 0], 0.05):.2f}")


if __name__ == "__main__":
    main()
