"""End to end: a real pricerd on a loopback port, the real `pricer` CLI, and
NumPy reading what the CLI writes. The references are computed here in float64
from the files themselves (ST from --prices-out, A from the .npy we send)."""

import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import CliTestCase  # noqa: E402

ARGS = None


def read_stats_csv(path):
    """The header of a --stats-out CSV and its columns by name, as float64."""
    with open(path) as f:
        header = f.readline().rstrip("\n").split(",")
    values = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return header, {name: values[:, k] for k, name in enumerate(header)}


def quantile(sorted_values, q):
    """The quantile of level q of ascending float64 values, by the rule of
    pricer.proto: h = (n - 1) q, k = floor(h), x_k + (h - k) (x_{k+1} - x_k)."""
    n = len(sorted_values)
    h = (n - 1) * q
    k = min(n - 1, int(np.floor(h)))
    if k == n - 1:
        return sorted_values[k]
    return sorted_values[k] + (h - k) * (sorted_values[k + 1] - sorted_values[k])


def shocks(st, spot, volatility, rate, maturity):
    """The standard normal shocks x behind ST: log(ST/S0) = (r - s^2/2) T + s sqrt(T) x."""
    st = st.astype(np.float64)
    return ((np.log(st / spot) - (rate - volatility ** 2 / 2) * maturity)
            / (volatility * np.sqrt(maturity)))


def write_market(path, spot, volatility):
    with open(path, "w") as f:
        f.write("spot,volatility\n")
        for s, v in zip(spot, volatility):
            f.write("%r,%r\n" % (s, v))


def write_correlation(path, matrix):
    with open(path, "w") as f:
        for row in matrix:
            f.write(",".join(repr(float(x)) for x in row) + "\n")


class CliNumpyTest(CliTestCase):
    def test_full_and_prices_match_float64_product(self):
        rng = np.random.default_rng(7)
        n, m, p = 12, 150, 2000
        a = rng.uniform(-1.0, 2.0, size=(n, m))  # float64, C order: the CLI converts
        np.save(self.path("a.npy"), a)
        with open(self.path("market.csv"), "w") as f:
            f.write("spot,volatility\n")
            for i in range(n):
                f.write("%r,%r\n" % (5.0 + i, 0.05 * i))
        proc = self.pricer("--market-file", self.path("market.csv"), "--paths", str(p),
                           "--seed", "3", "--rate", "0.01", "--maturity", "2",
                           "--scenarios-file", self.path("a.npy"), "--chunk-columns", "17",
                           "--full-out", self.path("sc.npy"), "--prices-out", self.path("st.npy"),
                           "--stats-out", self.path("stats.csv"))
        self.assertRegex(proc.stdout, r"priced 150 columns x 2000 paths x 12 issuers in [0-9.]+ s")
        self.assertRegex(proc.stdout, r"GFLOP/s")

        sc = np.load(self.path("sc.npy"))
        st = np.load(self.path("st.npy"))
        self.assertEqual(sc.shape, (p, m))
        self.assertEqual(sc.dtype, np.float32)
        self.assertTrue(sc.flags.f_contiguous)
        self.assertEqual(st.shape, (p, n))
        self.assertEqual(st.dtype, np.float32)

        # ST @ A in float64 from the files: agreement to float32 rounding of
        # the GEMM, relative to the sum of |terms|.
        a32 = a.astype(np.float32).astype(np.float64)
        reference = st.astype(np.float64) @ a32
        scale = np.abs(st.astype(np.float64)) @ np.abs(a32)
        self.assertLess(np.max(np.abs(sc - reference) / scale), 1e-5)

        # An issuer with volatility 0 grows at the risk-free rate on every path.
        np.testing.assert_allclose(st[:, 0], 5.0 * np.exp(0.01 * 2.0), rtol=1e-6)

        # The statistics CSV describes the same SC: today's value V0 = A^T S0,
        # then the default four.
        header, stats = read_stats_csv(self.path("stats.csv"))
        self.assertEqual(header, ["column", "v0", "mean", "stddev", "min", "max"])
        np.testing.assert_array_equal(stats["column"], np.arange(m))
        np.testing.assert_allclose(stats["v0"], a32.T @ (5.0 + np.arange(n)), rtol=1e-12)
        sc64 = sc.astype(np.float64)
        np.testing.assert_allclose(stats["mean"], sc64.mean(axis=0), rtol=1e-8)
        np.testing.assert_allclose(stats["stddev"], sc64.std(axis=0, ddof=1), rtol=1e-7)
        np.testing.assert_allclose(stats["min"], sc64.min(axis=0), rtol=1e-9)
        np.testing.assert_allclose(stats["max"], sc64.max(axis=0), rtol=1e-9)

    def test_column_range_and_chunk_width_do_not_change_values(self):
        common = ["--issuers", "20", "--paths", "1500", "--seed", "11", "--scenarios", "700"]
        self.pricer(*common, "--full-out", self.path("all.npy"), "--chunk-columns", "9")
        self.pricer(*common, "--full-out", self.path("part.npy"), "--column-begin", "65",
                    "--column-end", "333")
        whole = np.load(self.path("all.npy"))
        part = np.load(self.path("part.npy"))
        self.assertEqual(part.shape, (1500, 268))
        np.testing.assert_array_equal(part, whole[:, 65:333])

    def test_full_output_to_dev_null_streams_without_a_journal(self):
        # A benchmark's sink: the full result goes nowhere, the statistics
        # still arrive, and no journal is created beside /dev/null.
        common = ["--issuers", "20", "--paths", "1500", "--seed", "11", "--scenarios", "700",
                  "--stats", "mean,var:0.99"]
        self.pricer(*common, "--full-out", os.devnull, "--stats-out", self.path("sink.csv"))
        self.pricer(*common, "--stats-out", self.path("nosink.csv"))
        with open(self.path("sink.csv")) as a, open(self.path("nosink.csv")) as b:
            self.assertEqual(a.read(), b.read())
        self.assertFalse(os.path.exists(os.devnull + ".progress"))

    def test_seed_preset_at_reduced_scale(self):
        proc = self.pricer("--preset", "seed", "--scenarios", "300", "--paths", "500",
                           "--stats-out", self.path("seed.csv"))
        self.assertRegex(proc.stdout, r"priced 300 columns x 500 paths x 500 issuers")
        _, stats = read_stats_csv(self.path("seed.csv"))
        self.assertEqual(len(stats["column"]), 300)
        # A ~ U(0,1) and spot ~ U(5,10) over 500 issuers: E[SC] = e^{rT} sum_i S0_i A_ij,
        # about 500 * 7.5 * 0.5 * e^0.02 = 1913; each column's mean is near that.
        self.assertTrue(np.all((stats["mean"] > 1500) & (stats["mean"] < 2400)), stats["mean"][:5])

    def test_refused_request_exits_nonzero_with_status(self):
        proc = self.pricer("--preset", "seed", "--scenarios", "10", "--maturity", "-1",
                           check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("INVALID_ARGUMENT", proc.stderr)
        self.assertIn("maturity is -1", proc.stderr)
        # The server still serves.
        self.pricer("--preset", "seed", "--scenarios", "10", "--paths", "100")

    def test_risk_statistics_match_numpy(self):
        rng = np.random.default_rng(21)
        n, m, p = 8, 40, 3001
        rate, maturity = 0.03, 1.5
        a = rng.uniform(0.0, 1.0, size=(n, m))
        np.save(self.path("risk_a.npy"), a)
        spot = 5.0 + np.arange(n)
        write_market(self.path("risk_market.csv"), spot, 0.1 + 0.05 * np.arange(n))
        self.pricer("--market-file", self.path("risk_market.csv"), "--paths", str(p),
                    "--seed", "9", "--rate", str(rate), "--maturity", str(maturity),
                    "--scenarios-file", self.path("risk_a.npy"), "--chunk-columns", "16",
                    "--stats", "mean,var:0.99,es:0.99,quantile:0.5",
                    "--stats-out", self.path("risk.csv"), "--full-out", self.path("risk_sc.npy"))
        header, stats = read_stats_csv(self.path("risk.csv"))
        self.assertEqual(header, ["column", "v0", "mean", "var_0.99", "es_0.99", "quantile_0.5"])
        np.testing.assert_array_equal(stats["column"], np.arange(m))

        sc = np.load(self.path("risk_sc.npy")).astype(np.float64)
        self.assertEqual(sc.shape, (p, m))
        v0 = a.astype(np.float32).astype(np.float64).T @ spot
        np.testing.assert_allclose(stats["v0"], v0, rtol=1e-12)
        np.testing.assert_allclose(stats["mean"], sc.mean(axis=0), rtol=1e-9)
        np.testing.assert_allclose(stats["quantile_0.5"], np.quantile(sc, 0.5, axis=0),
                                   rtol=1e-12)
        discount = np.exp(-rate * maturity)
        for j in range(m):
            column = np.sort(sc[:, j])
            self.assertEqual(stats["quantile_0.5"][j], quantile(column, 0.5), j)
            q = quantile(column, 1 - 0.99)
            self.assertAlmostEqual(stats["var_0.99"][j] / (v0[j] - discount * q), 1.0,
                                   delta=1e-9, msg=j)
            # ES's tail: the k = floor((P - 1) 0.01) + 1 smallest (docs/risk.md).
            tail = column[:int(np.floor((len(column) - 1) * 0.01)) + 1].mean()
            self.assertAlmostEqual(stats["es_0.99"][j] / (v0[j] - discount * tail), 1.0,
                                   delta=1e-9, msg=j)
        # A loss at 99% for every column, and ES beyond VaR.
        self.assertTrue(np.all(stats["var_0.99"] > 0))
        self.assertTrue(np.all(stats["es_0.99"] > stats["var_0.99"]))

    def test_correlation_file_correlates_the_shocks(self):
        n, p = 3, 20000
        spot, volatility = np.array([5.0, 7.0, 9.0]), np.array([0.2, 0.3, 0.25])
        write_market(self.path("corr_market.csv"), spot, volatility)
        matrix = np.array([[1.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 1.0]])
        write_correlation(self.path("corr.csv"), matrix)
        self.pricer("--market-file", self.path("corr_market.csv"), "--paths", str(p),
                    "--scenarios", "5", "--rate", "0.01", "--correlation-file",
                    self.path("corr.csv"), "--prices-out", self.path("corr_st.npy"))
        x = shocks(np.load(self.path("corr_st.npy")), spot, volatility, 0.01, 1.0)
        self.assertEqual(x.shape, (p, n))
        # Standard error of each sample correlation: at most 1 / sqrt(P) ~ 0.007.
        np.testing.assert_allclose(np.corrcoef(x, rowvar=False), matrix, atol=0.03)
        np.testing.assert_allclose(x.std(axis=0), 1.0, atol=0.03)

    def test_correlation_that_is_not_positive_definite_is_refused(self):
        write_correlation(self.path("not_pd.csv"),
                          [[1.0, 0.9, 0.9], [0.9, 1.0, -0.9], [0.9, -0.9, 1.0]])
        proc = self.pricer("--issuers", "3", "--paths", "100", "--scenarios", "5",
                           "--correlation-file", self.path("not_pd.csv"), check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("INVALID_ARGUMENT", proc.stderr)
        self.assertIn("positive definite", proc.stderr)

    def test_antithetic_paths_negate_the_shocks(self):
        p = 1001
        spot, volatility = np.array([6.0, 8.0]), np.array([0.3, 0.15])
        write_market(self.path("anti_market.csv"), spot, volatility)
        self.pricer("--market-file", self.path("anti_market.csv"), "--paths", str(p),
                    "--scenarios", "4", "--antithetic", "--prices-out", self.path("anti_st.npy"),
                    "--stats-out", self.path("anti.csv"))
        x = shocks(np.load(self.path("anti_st.npy")), spot, volatility, 0.0, 1.0)
        pair_sums = x[0:p - 1:2] + x[1:p:2]
        self.assertLess(np.max(np.abs(pair_sums)), 1e-4)
        self.assertGreater(np.max(np.abs(x)), 1.0)
        _, stats = read_stats_csv(self.path("anti.csv"))
        self.assertEqual(len(stats["mean"]), 4)

    def test_bad_stats_item_exits_2_naming_it(self):
        proc = self.pricer("--issuers", "3", "--paths", "100", "--scenarios", "5",
                           "--stats", "mean,median", check=False)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--stats: 'median' is not one of", proc.stderr)
        proc = self.pricer("--issuers", "3", "--paths", "100", "--scenarios", "5",
                           "--stats", "var:high", check=False)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("the level 'high' is not a number", proc.stderr)
        # A level out of range: refused before any call.
        proc = self.pricer("--issuers", "3", "--paths", "100", "--scenarios", "5",
                           "--stats", "var:1.5", check=False)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--stats: 'var:1.5': the level must be in (0, 1)", proc.stderr)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
