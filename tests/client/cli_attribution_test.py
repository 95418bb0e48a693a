"""End to end, a real pricerd and the real CLI: the Euler contributions of
--contributions-out against their definition recomputed here in float64
from the run's own SC (--full-out: each column's band of paths by a stable
sort) and X (--prices-out ST, or a book's --values-out V): they match to
float32 rounding, ES's add up to the CSV's ES, their standard errors are the
band's; a split run and a killed-and-resumed run write the same files; and
usage errors."""

import filecmp
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import CliTestCase, read_csv_rows  # noqa: E402

ARGS = None
SPOT = [8.0, 10.0, 12.5, 20.0, 5.5, 9.0]
VOL = [0.2, 0.35, 0.5, 0.15, 0.6, 0.3]
RATE, MATURITY = 0.03, 1.0
DISCOUNT = np.exp(-RATE * MATURITY)


def band(level, paths, es):
    """The ranks first..last of ES's tail or VaR's window (docs/risk.md)."""
    low = int(np.floor((paths - 1) * (1.0 - level)))
    if es:
        return 0, low
    w = int(np.floor(np.sqrt(paths) / 2))
    return max(0, low - w), min(paths - 1, low + 1 + w)


def recompute(sc, x, a, x0, first, last):
    """Contributions (R x M), their standard errors and each column's band
    mean loss, in float64: the band from SC sorted (ties by path), the mean
    of X over it."""
    order = np.argsort(sc, axis=0, kind="stable")[first:last + 1]  # n x M
    n = last - first + 1
    rows = x[order]  # n x M x R
    mean = rows.mean(axis=0)  # M x R
    sd = rows.std(axis=0, ddof=1)
    c = -(a.T * (DISCOUNT * mean - x0)).T
    se = (np.abs(a.T) * DISCOUNT * sd / np.sqrt(n)).T
    loss = a.T @ x0 - DISCOUNT * np.take_along_axis(sc, order, axis=0).mean(axis=0)
    return c, se, loss


class CliAttributionTest(CliTestCase):
    def market(self):
        return self.write("market.csv", ["spot,volatility"] + [
            f"{s},{v}" for s, v in zip(SPOT, VOL)])

    def scenarios(self, name, rows, columns, seed=3):
        a = np.random.default_rng(seed).uniform(-1, 1, size=(rows, columns)).astype(np.float32)
        np.save(self.path(name), a)
        return self.path(name), a.astype(np.float64)

    def files(self, prefix, errors):
        names = ["es_0.975", "var_0.99"]
        paths = [self.path(f"{prefix}.{n}.npy") for n in names]
        if errors:
            paths += [self.path(f"{prefix}.{n}.se.npy") for n in names]
        return paths

    def price(self, prefix, *args, errors=True):
        extra = ["--errors"] if errors else []
        return self.pricer("--market-file", self.market(), "--rate", str(RATE), "--maturity",
                           str(MATURITY), "--stats", "mean,var:0.99,es:0.975",
                           "--contributions", "var:0.99,es:0.975",
                           "--contributions-out", self.path(prefix),
                           "--stats-out", self.path(f"{prefix}_stats.csv"), *extra, *args)

    def check(self, prefix, x, a, x0):
        """The contributions of run `prefix` against recompute()."""
        sc = np.load(self.path(f"{prefix}_full.npy")).astype(np.float64)
        paths = sc.shape[0]
        _, rows = read_csv_rows(self.path(f"{prefix}_stats.csv"))
        es = np.array([float(r["es_0.975"]) for r in rows])
        scale = np.abs(a) * (DISCOUNT * np.abs(x).max(axis=0)[:, None] + np.abs(x0)[:, None])
        for name, level, is_es in (("es_0.975", 0.975, True), ("var_0.99", 0.99, False)):
            c = np.load(self.path(f"{prefix}.{name}.npy")).astype(np.float64)
            se = np.load(self.path(f"{prefix}.{name}.se.npy")).astype(np.float64)
            self.assertEqual(c.shape, a.shape)
            want, want_se, loss = recompute(sc, x, a, x0, *band(level, paths, is_es))
            np.testing.assert_array_less(np.abs(c - want), 1e-6 * scale + 1e-12, name)
            np.testing.assert_allclose(se, want_se, rtol=1e-5, atol=1e-12, err_msg=name)
            # They add up to the band's mean loss (SC's float32 products of R terms).
            tolerance = 4 * (a.shape[0] + 2) * 2.0 ** -24 * scale.sum(axis=0)
            np.testing.assert_array_less(np.abs(c.sum(axis=0) - loss), tolerance, name)
            if is_es:
                np.testing.assert_array_less(np.abs(c.sum(axis=0) - es), tolerance, name)

    def test_contributions_match_their_definition_from_sc_and_st(self):
        scenarios, a = self.scenarios("a.npy", len(SPOT), 300)
        self.price("gbm", "--paths", "2000", "--seed", "7", "--scenarios-file", scenarios,
                   "--full-out", self.path("gbm_full.npy"),
                   "--prices-out", self.path("gbm_prices.npy"), "--sensitivities", "delta,vega")
        st = np.load(self.path("gbm_prices.npy")).astype(np.float64)
        spot, vol = np.array(SPOT), np.array(VOL)
        self.check("gbm", st, a, spot)
        # A book of stocks: delta S0 is the contribution; vega the tail's mean
        # of dST/dsigma = ST (sqrt(T) x - sigma T), x recovered from ST.
        sc = np.load(self.path("gbm_full.npy")).astype(np.float64)
        dst = st * (np.log(st / spot) - (RATE + vol ** 2 / 2) * MATURITY) / vol
        for name, level, is_es in (("es_0.975", 0.975, True), ("var_0.99", 0.99, False)):
            c = np.load(self.path(f"gbm.{name}.npy")).astype(np.float64)
            delta = np.load(self.path(f"gbm.{name}.delta.npy")).astype(np.float64)
            scale = np.abs(c) + np.abs(a) * spot[:, None]
            np.testing.assert_array_less(np.abs(delta * spot[:, None] - c), 1e-6 * scale)
            vega = np.load(self.path(f"gbm.{name}.vega.npy")).astype(np.float64)
            self.assertEqual(np.load(self.path(f"gbm.{name}.vega.se.npy")).shape, a.shape)
            want, _, _ = recompute(sc, dst, a, np.zeros(len(SPOT)), *band(level, 2000, is_es))
            np.testing.assert_allclose(vega, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())

    def test_a_book_on_historical_returns_attributes_its_instruments(self):
        r = np.random.default_rng(5).normal(0, 0.25, size=(1500, len(SPOT)))
        np.save(self.path("returns.npy"), r)
        book = self.write("book.csv", ["issuer,type,strike,expiry"] + [
            f"{i},{kind},{s * m},2" for i, s in enumerate(SPOT)
            for kind, m in (("call", 1.05), ("put", 0.9))])
        k = 2 * len(SPOT)
        # The identity first: those columns' V0 are the instruments' values today.
        a = np.hstack([np.eye(k), np.random.default_rng(8).uniform(-1, 1, size=(k, 200))])
        np.save(self.path("book_a.npy"), a.astype(np.float32))
        self.price("book", "--returns-file", self.path("returns.npy"), "--instruments-file", book,
                   "--scenarios-file", self.path("book_a.npy"),
                   "--full-out", self.path("book_full.npy"),
                   "--values-out", self.path("book_values.npy"))
        v = np.load(self.path("book_values.npy")).astype(np.float64)
        _, rows = read_csv_rows(self.path("book_stats.csv"))
        today = np.array([float(rows[j]["v0"]) for j in range(k)])
        self.check("book", v, a.astype(np.float32).astype(np.float64), today)

    def test_a_split_and_a_resumed_run_write_the_same_files(self):
        args = ["--preset", "seed", "--scenarios", "6000", "--chunk-columns", "256"]
        self.pricer(*args, "--stats", "es:0.975", "--contributions", "es:0.975",
                    "--contributions-out", self.path("whole"))
        self.pricer(*args, "--stats", "es:0.975", "--contributions", "es:0.975",
                    "--contributions-out", self.path("split"), "--split", "3")
        want = self.path("whole.es_0.975.npy")
        self.assertEqual(np.load(want).shape, (500, 6000))
        self.assertTrue(filecmp.cmp(self.path("split.es_0.975.npy"), want, shallow=False))
        resumed = args + ["--stats", "es:0.975", "--contributions", "es:0.975",
                          "--contributions-out", self.path("resumed")]
        self.kill_once_journaled(resumed, self.path("resumed.es_0.975.npy.progress"), 2000)
        proc = self.pricer(*resumed, "--resume")
        self.assertRegex(proc.stdout, r"priced \d+ columns \(\d+ more from the journal\)")
        self.assertTrue(filecmp.cmp(self.path("resumed.es_0.975.npy"), want, shallow=False))

    def test_usage_errors_are_refused(self):
        for args, message in (
                (["--contributions", "es:0.975"], "--contributions and --contributions-out go"),
                (["--contributions", "mean", "--contributions-out", self.path("u")],
                 "--contributions: 'mean' is not es:L or var:L"),
                (["--contributions", "es:0.975,es:.975", "--contributions-out", self.path("u")],
                 "are the same item"),
                (["--contributions", "es:0.975", "--contributions-out", self.path("u"),
                  "--moments-from-covariance"], "moments_from_covariance is true"),
                (["--sensitivities", "delta"], "give --contributions"),
                (["--contributions", "es:0.975", "--contributions-out", self.path("u"),
                  "--sensitivities", "gamma"], "--sensitivities: 'gamma' is not delta or vega")):
            proc = self.pricer("--issuers", "3", "--paths", "100", "--scenarios", "5", *args,
                               check=False)
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn(message, proc.stderr)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
