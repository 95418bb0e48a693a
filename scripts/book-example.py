#!/usr/bin/env python3
"""The README's worked example: a book of options on 500 issuers like the
original example's (spot U(5, 10), volatility U(0, 1)), its VaR and ES by full
revaluation against the delta-only (linear) approximation, on the same paths.

Two families of 1,000 portfolios each, over a call and a put struck at the
spot on every issuer, expiring a quarter after the one-year horizon:
  long calls      long w calls on 20 random issuers (convex: losses capped)
  short straddles short w calls and w puts on 20 random issuers (concave)
The delta-only book holds, per issuer, the options' Black-Scholes deltas today
in the stock; it prices the same paths (same seed), so the only difference
is the revaluation.

  scripts/book-example.py [--target localhost:50051] [--pricer build/client/pricer]

Needs a running pricerd and NumPy; prints a Markdown table.
"""

import argparse
import math
import os
import subprocess
import tempfile

import numpy as np

ISSUERS, PORTFOLIOS, NAMES, PATHS, RATE, EXPIRY = 500, 1000, 20, 10000, 0.02, 1.25
STATS = "var:0.99,es:0.975"


def market_and_book(folder, rng):
    """market.csv, book.csv (call, put per issuer) and the calls' and puts'
    deltas today (Black-Scholes at S0 over the whole EXPIRY)."""
    spot, vol = rng.uniform(5, 10, ISSUERS), rng.uniform(0.05, 1, ISSUERS)
    with open(os.path.join(folder, "market.csv"), "w") as f:
        f.write("issuer,spot,volatility\n")
        f.writelines(f"I{i},{s!r},{v!r}\n" for i, (s, v) in enumerate(zip(spot, vol)))
    with open(os.path.join(folder, "book.csv"), "w") as f:
        f.write("issuer,type,strike,expiry\n")
        for i, s in enumerate(spot):
            f.write(f"I{i},call,{s!r},{EXPIRY}\nI{i},put,{s!r},{EXPIRY}\n")
    w = vol * math.sqrt(EXPIRY)
    d1 = (RATE * EXPIRY + w * w / 2) / w  # ln(S / K) = 0 at the money
    call_delta = np.array([0.5 * math.erfc(-x / math.sqrt(2)) for x in d1])
    return call_delta, call_delta - 1


def portfolios(rng, calls, puts):
    """A (2N x M): w on NAMES random issuers, weights U(0, 1), `calls` and
    `puts` units of each option per unit of weight."""
    a = np.zeros((2 * ISSUERS, PORTFOLIOS), dtype=np.float32)
    for j in range(PORTFOLIOS):
        names = rng.choice(ISSUERS, NAMES, replace=False)
        w = rng.uniform(0, 1, NAMES)
        a[2 * names, j] = calls * w
        a[2 * names + 1, j] = puts * w
    return a


def price(args, folder, name, *flags):
    """VaR and ES of every column, read back from the statistics CSV."""
    out = os.path.join(folder, f"{name}.csv")
    subprocess.run([args.pricer, "price", "--target", args.target, "--market-file",
                    os.path.join(folder, "market.csv"), "--paths", str(PATHS), "--seed", "42",
                    "--rate", str(RATE), "--maturity", "1", "--stats", STATS,
                    "--stats-out", out, *flags], check=True, stdout=subprocess.DEVNULL)
    table = np.genfromtxt(out, delimiter=",", names=True)
    return table["var_099"], table["es_0975"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("PRICER_TARGET", "localhost:50051"))
    parser.add_argument("--pricer", default="build/client/pricer")
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    print("| portfolios | measure | full revaluation | delta-only | delta-only / full |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        call_delta, put_delta = market_and_book(folder, rng)
        for family, calls, puts in (("long calls", 1, 0), ("short straddles", -1, -1)):
            a = portfolios(rng, calls, puts)
            linear = a[0::2] * call_delta[:, None] + a[1::2] * put_delta[:, None]
            np.save(os.path.join(folder, "a.npy"), a)
            np.save(os.path.join(folder, "linear.npy"), linear.astype(np.float32))
            full = price(args, folder, "full", "--instruments-file",
                         os.path.join(folder, "book.csv"), "--scenarios-file",
                         os.path.join(folder, "a.npy"))
            delta = price(args, folder, "delta", "--scenarios-file",
                          os.path.join(folder, "linear.npy"))
            for measure, f, d in (("VaR 99%", full[0], delta[0]), ("ES 97.5%", full[1], delta[1])):
                print(f"| {family} | {measure} (median) | {np.median(f):.3f} | "
                      f"{np.median(d):.3f} | {np.median(d / f):.2f} |")


if __name__ == "__main__":
    main()
