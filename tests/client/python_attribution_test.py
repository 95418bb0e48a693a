"""Euler contributions (`contributions=`) in both Python clients against a
real pricerd (docs/risk.md, "Where the risk comes from"): the arrays against
their definition recomputed here in float64 from the call's own SC and ST
(the band from SC sorted, ties by path; X's mean over it), their sum against
ES, their errors; a split call gives the same bytes; the long pandas form;
bad items refused before any call."""

import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pricerd_fixture import CliTestCase  # noqa: E402  (its server)
from python_clients import BlockingAioClient, assert_same_result  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

from pricer_client import Client  # noqa: E402

try:
    import pandas
except ImportError:
    pandas = None

ARGS = None
SPOT = np.array([8.0, 10.0, 12.5, 20.0])
MARKET = dict(spot=SPOT, volatility=[0.2, 0.35, 0.5, 0.25], rate=0.03, maturity=1.0)
DISCOUNT = np.exp(-0.03)
A = np.random.default_rng(6).uniform(-1, 1, size=(4, 120)).astype(np.float32)


class AttributionTest(CliTestCase):
    def price(self, make, **arguments):
        with make(self.server.target) as client:
            return client.price(**MARKET, paths=1500, seed=9, scenarios=A, **arguments)

    def test_contributions_are_the_tails_mean_of_x_in_both_clients(self):
        results = [self.price(make, statistics=["mean", "var:0.99"],
                              contributions=["var:0.99", "es:0.975"], errors=True, full=True,
                              terminal_prices=True, sensitivities=["delta", "vega"])
                   for make in (Client, BlockingAioClient)]
        assert_same_result(self, results[1], results[0])
        r = results[0]
        self.assertEqual(set(r.contributions),
                         {"es_0.975", "es_0.975_se", "var_0.99", "var_0.99_se"})
        # es_0.975 was added to the statistics: the contributions add up to it.
        self.assertIn("es_0.975", r.statistics)
        sc, st = r.full.astype(np.float64), r.terminal_prices.astype(np.float64)
        a = A.astype(np.float64)
        k = int(np.floor(1499 * 0.025)) + 1
        tail = np.argsort(sc, axis=0, kind="stable")[:k]  # k x M
        mean = st[tail].mean(axis=0).T  # 4 x M
        want = -a * (DISCOUNT * mean - SPOT[:, None])
        scale = np.abs(a) * (DISCOUNT * st.max() + SPOT.max())
        c = r.contributions["es_0.975"]
        self.assertEqual(c.shape, (4, 120))
        self.assertTrue(np.all(np.abs(c - want) <= 1e-6 * scale))
        self.assertTrue(np.all(np.abs(c.sum(axis=0) - r.statistics["es_0.975"]) <=
                               1e-5 * scale.sum(axis=0)))
        se = np.abs(a) * DISCOUNT * st[tail].std(axis=0, ddof=1).T / np.sqrt(k)
        np.testing.assert_allclose(r.contributions["es_0.975_se"], se, rtol=1e-5)
        # A book of stocks: delta S0 is the contribution.
        self.assertEqual(set(r.sensitivities["es_0.975"]),
                         {"delta", "delta_se", "vega", "vega_se"})
        delta = r.sensitivities["es_0.975"]["delta"].astype(np.float64)
        self.assertTrue(np.all(np.abs(delta * SPOT[:, None] - c) <= 1e-6 * scale))

    def test_a_split_call_and_the_long_form(self):
        whole = self.price(Client, statistics=["es:0.975"], contributions=["es:0.975"])
        split = self.price(Client, statistics=["es:0.975"], contributions=["es:0.975"], split=3)
        assert_same_result(self, split, whole)
        if pandas is None:
            self.skipTest("pandas is not installed (python_package_test covers it)")
        frame = whole.contributions_to_pandas()
        self.assertEqual(list(frame.columns), ["column", "row", "item", "value"])
        self.assertEqual(len(frame), 4 * 120)
        row = frame[(frame.column == 7) & (frame.row == 2)]
        self.assertEqual(row.value.item(), whole.contributions["es_0.975"][2, 7])

    def test_bad_items_are_refused_before_any_call(self):
        with Client(self.server.target) as client:
            for contributions, message in (
                    (["mean"], "contributions item 'mean' is not es:L or var:L"),
                    (["es:1.5"], "the level must be in (0, 1)"),
                    (["es:0.975", "es:.975"], "are the same item (es_0.975)"),
                    ("es:0.975", "must be a list of items")):
                with self.assertRaises((ValueError, TypeError)) as raised:
                    client.price(**MARKET, paths=100, scenarios=A, contributions=contributions)
                self.assertIn(message, str(raised.exception))
            with self.assertRaisesRegex(ValueError, "sensitivities item 'gamma' is not delta"):
                client.price(**MARKET, paths=100, scenarios=A, contributions=["es:0.975"],
                             sensitivities=["gamma"])
            with self.assertRaisesRegex(ValueError, "give contributions"):
                client.price(**MARKET, paths=100, scenarios=A, sensitivities=["delta"])
            with self.assertRaisesRegex(ValueError, "contributions needs statistics"):
                client.price(**MARKET, paths=100, scenarios=A, statistics=None, full=True,
                             contributions=["es:0.975"])


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
