"""End to end, a real pricerd and the real CLI: market and correlation CSV
files as pandas and people write them (an index column, labels, quoted labels
with commas, columns in another order, extra columns, spaces) price bit for bit like the plain files
of the same data; labels that do not match are refused, naming them."""

import csv
import filecmp
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import CliTestCase  # noqa: E402

ARGS = None
LABELS = ["ACME", "Initech", "Umbrella", "Hooli"]
MODEL = ["--paths", "2000", "--scenarios", "30", "--seed", "9", "--rate", "0.01",
         "--stats", "mean,stddev,var:0.99"]
OUTPUTS = ("stats.csv", "full.npy", "prices.npy")


def text(values):
    return [repr(float(v)) for v in values]


class MarketFilesTest(CliTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(3)
        cls.spot = rng.uniform(5, 10, len(LABELS))
        cls.volatility = rng.uniform(0.1, 0.5, len(LABELS))
        cls.correlation = np.corrcoef(rng.normal(size=(len(LABELS), 12)))

    def plain_market(self, name, order):
        return self.write(name, ["spot,volatility"] +
                          [f"{s},{v}" for s, v in zip(text(self.spot[order]),
                                                      text(self.volatility[order]))])

    def plain_correlation(self, name, order):
        return self.write(name, [",".join(text(row)) for row in self.correlation[order][:, order]])

    def price(self, prefix, market, correlation):
        outputs = [self.path(f"{prefix}_{name}") for name in OUTPUTS]
        self.pricer("--market-file", market, "--correlation-file", correlation, *MODEL,
                    "--stats-out", outputs[0], "--full-out", outputs[1], "--prices-out",
                    outputs[2])
        return outputs

    def assert_same_files(self, got, want):
        for g, w in zip(got, want):
            self.assertTrue(filecmp.cmp(g, w, shallow=False), f"{g} differs from {w}")

    def test_pandas_and_hand_written_files_price_like_the_plain_ones(self):
        order = list(range(len(LABELS)))
        want = self.price("plain", self.plain_market("plain_market.csv", order),
                          self.plain_correlation("plain_corr.csv", order))
        spot, vol = text(self.spot), text(self.volatility)
        # df.to_csv() and corr.to_csv() of a default index: labels 0..3.
        pandas_market = self.write("pandas_market.csv", [",spot,volatility"] + [
            f"{k},{s},{v}" for k, (s, v) in enumerate(zip(spot, vol))])
        pandas_corr = self.write("pandas_corr.csv", [",0,1,2,3"] + [
            f"{k}," + ",".join(text(row)) for k, row in enumerate(self.correlation)])
        self.assert_same_files(self.price("pandas", pandas_market, pandas_corr), want)
        # Columns in another order, extra columns, spaces after the commas and
        # around the names, CRLF; the correlation with a header of labels only.
        shuffled = self.write("shuffled_market.csv", [" sector , volatility,  spot ,rating\r"] + [
            f"tech, {v} , {s},AA\r" for s, v in zip(spot, vol)])
        headed = self.write("headed_corr.csv", [" A, B ,C,D"] + [
            ", ".join(text(row)) for row in self.correlation])
        self.assert_same_files(self.price("shuffled", shuffled, headed), want)

    def test_labelled_correlation_follows_the_markets_issuers(self):
        # The market lists the issuers in another order than the correlation:
        # the correlation is taken in the market's order.
        order = [2, 0, 3, 1]
        want = self.price("ordered", self.plain_market("ordered_market.csv", order),
                          self.plain_correlation("ordered_corr.csv", order))
        market = self.write("issuer_market.csv", ["volatility,issuer,spot"] + [
            f"{v},{LABELS[k]},{s}" for k, s, v in zip(order, text(self.spot[order]),
                                                      text(self.volatility[order]))])
        corr = self.write("labelled_corr.csv", ["," + ",".join(LABELS)] + [
            f"{label}," + ",".join(text(row)) for label, row in zip(LABELS, self.correlation)])
        self.assert_same_files(self.price("labelled", market, corr), want)

    def test_labels_with_commas_and_quotes_as_the_csv_module_quotes_them(self):
        # pandas' to_csv writes through the csv module: QUOTE_MINIMAL, CRLF.
        order = [1, 3, 0, 2]
        want = self.price("unquoted", self.plain_market("unquoted_market.csv", order),
                          self.plain_correlation("unquoted_corr.csv", order))
        labels = ['ACME, Inc.', 'The "Big" One', 'Umbrella', 'Hooli, Ltd']
        market, corr = self.path("quoted_market.csv"), self.path("quoted_corr.csv")
        with open(market, "w", newline="") as f:
            rows = csv.writer(f)
            rows.writerow(["issuer", "spot", "volatility"])
            for k in order:
                rows.writerow([labels[k], repr(float(self.spot[k])),
                               repr(float(self.volatility[k]))])
        with open(corr, "w", newline="") as f:
            rows = csv.writer(f)
            rows.writerow([""] + labels)
            for label, row in zip(labels, self.correlation):
                rows.writerow([label] + text(row))
        with open(market) as f:
            self.assertIn('"ACME, Inc."', f.read())
        self.assert_same_files(self.price("quoted", market, corr), want)

    def test_labels_that_do_not_match_are_refused_naming_them(self):
        market = self.write("wrong_market.csv", ["issuer,spot,volatility"] + [
            f"{label},7,0.2" for label in ["ACME", "Initech", "Umbrella", "Globex"]])
        corr = self.write("wrong_corr.csv", ["," + ",".join(LABELS)] + [
            f"{label}," + ",".join(text(row)) for label, row in zip(LABELS, self.correlation)])
        proc = self.pricer("--market-file", market, "--correlation-file", corr, *MODEL,
                           check=False)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"pricer: {corr}: its labels are not the issuers of {market}; issuers "
                      "without a label: Globex; labels of no issuer: Hooli", proc.stderr)

    def test_a_bad_cell_is_named_by_file_row_and_column(self):
        market = self.write("bad_market.csv", ["volatility,spot", "0.2,7", "", "high,8"])
        proc = self.pricer("--market-file", market, *MODEL, check=False)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"pricer: {market}:4, column volatility: 'high' is not a number",
                      proc.stderr)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
