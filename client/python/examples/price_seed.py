"""The original example at reduced scale from Python: VaR and expected
shortfall per scenario column, and the full SC of a few columns.

    pip install client/python
    python3 client/python/examples/price_seed.py --target localhost:50051

`--stats-out F` writes what `pricer price --preset seed --scenarios N --paths P
--stats mean,stddev,var:0.99,es:0.99 --stats-out F` writes, and `--full-out G`
the SC that `pricer price --preset seed --scenarios N --paths P --column-end K
--full-out G` writes (K: --full-columns), to the bit.
"""

import argparse

import numpy as np

from pricer_client import Client, seed_preset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="localhost:50051")
    parser.add_argument("--scenarios", type=int, default=20_000)
    parser.add_argument("--paths", type=int, default=seed_preset()["paths"])
    parser.add_argument("--stats-out", help="the statistics as CSV, as the CLI writes them")
    parser.add_argument("--full-out", help="SC of the first --full-columns columns, .npy")
    parser.add_argument("--full-columns", type=int, default=100)
    args = parser.parse_args()

    model = seed_preset() | {"paths": args.paths, "scenarios": args.scenarios}
    with Client(args.target) as client:
        result = client.price(**model, statistics=["mean", "stddev", "var:0.99", "es:0.99"],
                              progress=lambda done, total: print(f"\r{done} / {total} columns",
                                                                 end="", flush=True))
        print()
        stats = result.statistics
        worst = int(np.argmax(stats["var_0.99"]))
        print(f"{args.scenarios} scenarios x {args.paths} paths in {result.elapsed_seconds:.2f} s "
              f"({result.flops / result.elapsed_seconds / 1e9:.1f} GFLOP/s)")
        print(f"average V0 {stats['v0'].mean():.2f}, average 99% VaR {stats['var_0.99'].mean():.2f}, "
              f"average 99% ES {stats['es_0.99'].mean():.2f}")
        print(f"largest 99% VaR: column {worst}, {stats['var_0.99'][worst]:.2f} "
              f"(V0 {stats['v0'][worst]:.2f})")
        if args.stats_out:
            result.write_csv(args.stats_out)
        # SC itself, into a memory-mapped .npy when a path is given.
        few = client.price(**model, column_end=args.full_columns, statistics=None,
                           full=args.full_out or True)
        print(f"SC of columns [0, {args.full_columns}): {few.full.shape[0]} paths, "
              f"5% quantile of column 0 {np.quantile(few.full[:, 0], 0.05):.2f}")


if __name__ == "__main__":
    main()
