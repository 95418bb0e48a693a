"""End to end, a real pricerd and the real CLI: a book from --instruments-file
(labels of the market file or indices, pandas' index column, columns in any
order) and historical scenarios from --returns-file or --returns-set, checked
against their definitions recomputed here in float64 from the run's own ST
(--prices-out): options at the horizon are their payoffs, SC = V A, and
ST = S0 exp(R); split runs and bad files too."""

import filecmp
import os
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import CliTestCase, scaled  # noqa: E402

ARGS = None
LABELS = ["ACME", "Initech", "Umbrella"]
SPOT = [8.0, 10.0, 12.5]
VOL = [0.2, 0.35, 0.5]
F32 = 2.0 ** -24


class CliBookTest(CliTestCase):
    def market(self):
        return self.write("market.csv", ["issuer,spot,volatility"] + [
            f"{label},{s},{v}" for label, s, v in zip(LABELS, SPOT, VOL)])

    def identity(self, k):
        path = self.path(f"identity{k}.npy")
        np.save(path, np.eye(k, dtype=np.float32))
        return path

    def outputs(self, prefix):
        return [self.path(f"{prefix}_{name}") for name in ("stats.csv", "full.npy", "prices.npy")]

    def price(self, prefix, *args, check=True):
        stats, full, prices = self.outputs(prefix)
        return self.pricer("--market-file", self.market(), "--rate", "0.03", "--maturity", "1",
                           "--stats", "mean,stddev,var:0.99,es:0.975", "--stats-out", stats,
                           "--full-out", full, "--prices-out", prices, *args, check=check)

    def test_options_at_the_horizon_are_their_payoffs_and_labels_resolve(self):
        book = self.write("book.csv", ["issuer,type,strike,expiry,volatility"] + [
            f"{label},{kind},{strike},1.0," for label, strike in zip(LABELS, (8, 9.5, 13))
            for kind in ("call", "PUT")])
        self.price("labels", "--instruments-file", book, "--paths", "3000", "--seed", "5",
                   "--scenarios-file", self.identity(6), "--values-out",
                   self.path("labels_values.npy"))
        sc = np.load(self.path("labels_full.npy")).astype(np.float64)
        # A is the identity: SC is V, which --values-out wrote too.
        np.testing.assert_array_equal(np.load(self.path("labels_values.npy")), sc)
        st = np.load(self.path("labels_prices.npy")).astype(np.float64)
        for k in range(6):
            strike = (8, 9.5, 13)[k // 2]
            payoff = np.maximum(st[:, k // 2] - strike, 0) if k % 2 == 0 else \
                np.maximum(strike - st[:, k // 2], 0)
            np.testing.assert_array_equal(sc[:, k], payoff.astype(np.float32), f"instrument {k}")
        # pandas' to_csv: an unnamed index column, indices for issuers, other
        # columns and another order: the same book, the same files.
        pandas = self.write("pandas_book.csv", [",expiry,type,issuer,desk,strike"] + [
            f"{2 * i + j},1.0,{kind},{i},rates,{strike}"
            for i, strike in enumerate((8, 9.5, 13)) for j, kind in enumerate(("call", "put"))])
        self.price("pandas", "--instruments-file", pandas, "--paths", "3000", "--seed", "5",
                   "--scenarios-file", self.identity(6))
        for got, want in zip(self.outputs("pandas"), self.outputs("labels")):
            self.assertTrue(filecmp.cmp(got, want, shallow=False), f"{got} differs from {want}")

    def returns(self, name, paths=700):
        r = np.random.default_rng(11).normal(0, 0.2, size=(paths, len(LABELS)))
        path = self.path(name)
        np.save(path, r)  # float64, C order: the CLI converts
        return path, r

    def test_historical_returns_give_s0_exp_r_and_the_product(self):
        returns, r = self.returns("returns.npy")
        a = np.random.default_rng(2).uniform(-1, 1, size=(len(LABELS), 40)).astype(np.float32)
        np.save(self.path("a.npy"), a)
        self.price("hist", "--returns-file", returns, "--scenarios-file", self.path("a.npy"))
        st = np.load(self.path("hist_prices.npy")).astype(np.float64)
        self.assertEqual(st.shape, (700, 3))
        expected = np.array(SPOT) * np.exp(r.astype(np.float32).astype(np.float64))
        np.testing.assert_allclose(st, expected, rtol=4 * F32)
        sc = np.load(self.path("hist_full.npy")).astype(np.float64)
        bound = 2 * (len(LABELS) + 2) * F32 * (np.abs(st) @ np.abs(a.astype(np.float64)))
        self.assertTrue(np.all(np.abs(sc - st @ a.astype(np.float64)) <= bound))
        # The same returns uploaded: the same files.
        up = subprocess.run([ARGS.pricer, "upload", "--target", self.server.target, returns],
                            capture_output=True, text=True, timeout=scaled(300))
        self.assertEqual(up.returncode, 0, up.stderr)
        set_id = up.stdout.split()[0]
        self.price("set", "--returns-set", set_id, "--scenarios-file", self.path("a.npy"))
        for got, want in zip(self.outputs("set"), self.outputs("hist")):
            self.assertTrue(filecmp.cmp(got, want, shallow=False), f"{got} differs from {want}")

    def test_a_split_run_of_a_book_on_historical_returns_writes_the_same_files(self):
        returns, _ = self.returns("split_returns.npy", paths=500)
        book = self.write("split_book.csv", ["issuer,type,strike,expiry"] + [
            f"{label},{kind},{s},2" for label, s in zip(LABELS, SPOT)
            for kind in ("call", "put", "forward")])
        a = np.random.default_rng(4).uniform(-1, 1, size=(9, 700)).astype(np.float32)
        np.save(self.path("split_a.npy"), a)
        args = ["--instruments-file", book, "--returns-file", returns,
                "--scenarios-file", self.path("split_a.npy")]
        self.price("whole", *args, "--values-out", self.path("whole_values.npy"))
        self.price("split", *args, "--split", "3", "--values-out", self.path("split_values.npy"))
        v = np.load(self.path("whole_values.npy"))
        self.assertEqual(v.shape, (500, 9))
        # The forward on issuer 2 (strike 12.5, a year past the horizon), in
        # float64 as the server evaluates it, then rounded.
        st = np.load(self.path("whole_prices.npy")).astype(np.float64)
        np.testing.assert_array_equal(
            v[:, 8], (st[:, 2] - SPOT[2] * np.exp(-0.03 * 1.0)).astype(np.float32))
        for got, want in zip(self.outputs("split") + [self.path("split_values.npy")],
                             self.outputs("whole") + [self.path("whole_values.npy")]):
            self.assertTrue(filecmp.cmp(got, want, shallow=False), f"{got} differs from {want}")

    def test_bad_books_and_returns_are_refused_naming_file_line_and_field(self):
        book = self.write("bad_book.csv", ["issuer,type,strike,expiry", "ACME,call,8,1",
                                           "Globex,put,9,1"])
        proc = self.price("bad1", "--instruments-file", book, "--paths", "100",
                          "--scenarios", "3", check=False)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"{book}:3, column issuer: 'Globex' is not an issuer of", proc.stderr)
        kinds = self.write("bad_kind.csv", ["issuer,type,strike,expiry", "0,swap,8,1"])
        proc = self.price("bad2", "--instruments-file", kinds, "--paths", "100",
                          "--scenarios", "3", check=False)
        self.assertIn(f"{kinds}:2, column type: 'swap' is not stock, forward, call or put",
                      proc.stderr)
        early = self.write("early.csv", ["issuer,type,strike,expiry", "0,call,8,0.5"])
        proc = self.price("bad3", "--instruments-file", early, "--paths", "100",
                          "--scenarios", "3", check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("instruments[0].expiry is 0.5: must be in [maturity 1, 100]", proc.stderr)
        returns, _ = self.returns("bad_returns.npy", paths=50)
        proc = self.price("bad4", "--returns-file", returns, "--paths", "60", "--scenarios", "3",
                          check=False)
        self.assertIn("paths is 60: must be 0 or the historical returns' rows (50)", proc.stderr)
        proc = self.price("bad5", "--returns-file", returns, "--antithetic", "--scenarios", "3",
                          check=False)
        self.assertIn("antithetic is true: historical returns give the paths", proc.stderr)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
