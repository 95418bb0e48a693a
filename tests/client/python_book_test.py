"""Books (`instruments=`) and historical scenarios (`returns=`) in both Python
clients against a real pricerd, checked against their definitions recomputed
here in float64 from the call's own ST (terminal_prices): options at the
horizon are their payoffs, a forward its discounted difference, SC = V A and
ST = S0 exp(R); a book as dicts, with empty cells, and as a pandas DataFrame
(when pandas is importable) is the same request; an uploaded set of returns
equals the inline array; bad arguments are refused before any call and the
server's refusals name the field (docs/risk.md, "Books and historical
scenarios")."""

import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pricerd_fixture import CliTestCase, Server  # noqa: E402  (the same fixture)
from python_clients import BlockingAioClient, assert_same_result  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

import grpc  # noqa: E402
from pricer_client import Client, PricerError  # noqa: E402

try:
    import pandas
except ImportError:
    pandas = None

ARGS = None
SPOT = [8.0, 10.0, 12.5]
VOL = [0.2, 0.35, 0.5]
MARKET = dict(spot=SPOT, volatility=VOL, rate=0.03, maturity=1.0)
F32 = 2.0 ** -24
STRIKES = (8, 9.5, 13)
# A call and a put on each issuer, expiring at the horizon (other keys ignored).
BOOK = [dict(issuer=i, type=kind, strike=strike, expiry=1.0, desk="rates")
        for i, strike in enumerate(STRIKES) for kind in ("call", "PUT")]
CLIENTS = (Client, BlockingAioClient)


def returns(paths=700, seed=11):
    return np.random.default_rng(seed).normal(0, 0.2, size=(paths, len(SPOT)))


class BookTest(CliTestCase):  # its server and scratch folder
    def price_both(self, **arguments):
        """The result of both clients, equal to the bit: the blocking one's."""
        results = []
        for make in CLIENTS:
            with make(self.server.target) as client:
                results.append(client.price(**MARKET, **arguments))
        assert_same_result(self, results[1], results[0])
        return results[0]

    def test_options_at_the_horizon_are_their_payoffs(self):
        r = self.price_both(instruments=BOOK, paths=3000, seed=5, scenarios=np.eye(6),
                            full=True, terminal_prices=True, statistics=["mean", "var:0.99"])
        self.assertEqual((r.paths, r.issuers, r.instruments), (3000, 3, 6))
        self.assertEqual((r.full.shape, r.terminal_prices.shape), ((3000, 6), (3000, 3)))
        st = r.terminal_prices.astype(np.float64)
        for k, row in enumerate(BOOK):
            s = st[:, row["issuer"]]
            payoff = np.maximum(s - row["strike"], 0) if row["type"] == "call" else \
                np.maximum(row["strike"] - s, 0)
            np.testing.assert_array_equal(r.full[:, k], payoff.astype(np.float32),
                                          f"instrument {k}")

    # A stock, a forward and a call with its own volatility, beyond the
    # horizon; A: the identity (SC's first columns are V), then other positions.
    MIXED = [dict(issuer=0, type="stock"), dict(issuer=2, type="Forward", strike=12, expiry=2),
             dict(issuer=1, type="call", strike=9, expiry=1.5, volatility=0.3)]
    MIXED_ARGUMENTS = dict(paths=2000, seed=9, full=True, terminal_prices=True,
                           scenarios=np.hstack([np.eye(3), np.arange(150).reshape(3, 50) % 5 - 2]),
                           statistics=["mean", "es:0.975"])

    def test_empty_cells_are_unset(self):
        want = self.price_both(instruments=self.MIXED, **self.MIXED_ARGUMENTS)
        self.assertEqual(want.instruments, 3)
        # The same with None and NaN for the empty cells, another key, a tuple.
        empty = ({"issuer": 0, "type": "STOCK", "strike": None, "expiry": float("nan"),
                  "volatility": None},
                 {"issuer": 2, "type": "forward", "strike": 12.0, "expiry": 2.0,
                  "volatility": float("nan")}, {**self.MIXED[2], "note": "ignored"})
        with Client(self.server.target) as client:
            assert_same_result(self, client.price(**MARKET, instruments=empty,
                                                  **self.MIXED_ARGUMENTS), want)
        # The stock is its ST, bit for bit; the forward s - K e^{-r tau}.
        st = want.terminal_prices.astype(np.float64)
        np.testing.assert_array_equal(want.full[:, 0], want.terminal_prices[:, 0])
        forward = st[:, 2] - 12 * np.exp(-0.03 * (2.0 - 1.0))
        self.assertTrue(np.all(np.abs(want.full[:, 1] - forward) <= 2 * F32 * (st[:, 2] + 12)))

    @unittest.skipIf(pandas is None, "pandas is not importable: no DataFrame book")
    def test_a_dataframe_is_the_same_book(self):
        want = self.price_both(instruments=self.MIXED, **self.MIXED_ARGUMENTS)
        # Columns in another order, one more, an index that is not 0..K-1,
        # NaN cells: the rows by position, the same request.
        frame = pandas.DataFrame(self.MIXED, index=[7, 3, 5])[["expiry", "volatility", "type",
                                                               "strike", "issuer"]]
        frame["desk"] = "rates"
        for make in CLIENTS:
            with make(self.server.target) as client:
                assert_same_result(self, client.price(**MARKET, instruments=frame,
                                                      **self.MIXED_ARGUMENTS), want)

    def check_returns(self, r, a, rows):
        self.assertEqual((r.paths, r.terminal_prices.shape, r.full.shape),
                         (len(rows), rows.shape, (len(rows), a.shape[1])))
        st = r.terminal_prices.astype(np.float64)
        expected = np.array(SPOT) * np.exp(rows.astype(np.float32).astype(np.float64))
        np.testing.assert_allclose(st, expected, rtol=4 * F32)
        a64 = a.astype(np.float64)
        bound = 2 * (len(SPOT) + 2) * F32 * (np.abs(st) @ np.abs(a64))
        self.assertTrue(np.all(np.abs(r.full - st @ a64) <= bound))

    def test_returns_give_s0_exp_r_and_the_product(self):
        r_rows = returns()
        a = np.random.default_rng(2).uniform(-1, 1, size=(3, 40)).astype(np.float32)
        arguments = dict(scenarios=a, full=True, terminal_prices=True,
                         statistics=["mean", "var:0.99"])
        r = self.price_both(returns=r_rows, **arguments)  # paths left out: R's rows
        self.check_returns(r, a, r_rows)
        with Client(self.server.target) as client:
            for paths in (0, 700):
                assert_same_result(self, client.price(**MARKET, returns=r_rows, paths=paths,
                                                      **arguments), r)
            # Any float dtype and order: sent as float32, column-major.
            assert_same_result(self, client.price(
                **MARKET, returns=np.asfortranarray(r_rows.astype(np.float32)), **arguments), r)

    def test_an_uploaded_set_equals_the_inline_returns(self):
        r_rows = returns(paths=500, seed=3)
        book = [dict(issuer=i, type=kind, strike=s, expiry=2.0)
                for i, s in enumerate(SPOT) for kind in ("call", "put", "forward")]
        a = np.random.default_rng(4).uniform(-1, 1, size=(9, 300)).astype(np.float32)
        arguments = dict(instruments=book, scenarios=a, full=True, terminal_prices=True,
                         statistics=["mean", "stddev", "es:0.975"])
        inline = self.price_both(returns=r_rows, **arguments)
        self.assertEqual((inline.paths, inline.instruments), (500, 9))
        for make in CLIENTS:
            with make(self.server.target) as client:
                set_id = client.upload(r_rows)
                self.assertEqual(set_id, Client.scenario_set_id(r_rows))
                assert_same_result(self, client.price(**MARKET, returns=set_id, **arguments),
                                   inline)
                # A set whose rows only the server knows: a preallocated SC.
                full = np.zeros((500, 300), np.float32, order="F")
                got = client.price(**MARKET, returns=set_id, **{**arguments, "full": full})
                self.assertIs(got.full, full)
                np.testing.assert_array_equal(full, inline.full)
        # Put-call parity on every path, V from an identity A: call - put = forward.
        with Client(self.server.target) as client:
            values = client.price(**MARKET, returns=set_id, instruments=book,
                                  scenarios=np.eye(9), full=True, statistics=None).full
        v = values.astype(np.float64).reshape(500, 3, 3)
        call, put, forward = v[:, :, 0], v[:, :, 1], v[:, :, 2]
        bound = 2 * F32 * (call + put + np.abs(forward)) + 1e-9
        self.assertTrue(np.all(np.abs(call - put - forward) <= bound))


class ArgumentsTest(unittest.TestCase):
    """Refused before any call (the target is a port nobody listens on, so a
    call would end UNAVAILABLE instead), in both clients; then the server's
    refusals, naming the field."""

    CALL = dict(issuer=0, type="call", strike=8, expiry=1.0)
    BAD = [  # (arguments, exception, what the message must name)
        (dict(paths=10, instruments=[CALL, {**CALL, "type": "swap"}], scenarios=2), ValueError,
         r"instruments\[1\]\.type is 'swap': must be stock, forward, call or put"),
        (dict(paths=10, instruments=[{**CALL, "type": 2}], scenarios=1), ValueError,
         r"instruments\[0\]\.type is 2: must be"),
        (dict(paths=10, instruments=[{**CALL, "strike": None}], scenarios=1), ValueError,
         r"instruments\[0\]\.strike is missing: a call needs one"),
        (dict(paths=10, instruments=[{**CALL, "expiry": float("nan")}], scenarios=1),
         ValueError, r"instruments\[0\]\.expiry is missing"),
        (dict(paths=10, instruments=[{**CALL, "strike": "8"}], scenarios=1), TypeError,
         r"instruments\[0\]\.strike must be a number"),
        (dict(paths=10, instruments=[{**CALL, "volatility": float("inf")}], scenarios=1),
         ValueError, r"instruments\[0\]\.volatility is inf: must be finite"),
        (dict(paths=10, instruments=[CALL, {**CALL, "issuer": "ACME"}], scenarios=2), ValueError,
         r"instruments\[1\]\.issuer is 'ACME': the market has no labels"),
        (dict(paths=10, instruments=[{**CALL, "issuer": 3}], scenarios=1), ValueError,
         r"instruments\[0\]\.issuer is 3: must be in \[0, 2\]"),
        (dict(paths=10, instruments=[{"type": "stock"}], scenarios=1), ValueError,
         r"instruments\[0\]\.issuer is missing"),
        (dict(paths=10, instruments=CALL, scenarios=1), TypeError, "instruments must be a pandas"),
        (dict(paths=10, instruments=[CALL, 3], scenarios=1), TypeError,
         r"instruments\[1\] must be a mapping"),
        (dict(paths=10, instruments=[], scenarios=1), ValueError, "instruments is empty"),
        (dict(paths=10, instruments=[CALL, CALL], scenarios=np.ones((3, 4))), ValueError,
         r"scenarios has shape \(3, 4\): must be \(2, M\), one row per instrument"),
        (dict(returns=np.ones(5), scenarios=3), ValueError,
         r"returns has shape \(5,\): must be \(P, 3\)"),
        (dict(returns=np.ones((5, 2)), scenarios=3), ValueError,
         r"returns has shape \(5, 2\): must be \(P, 3\)"),
        (dict(returns=np.ones((5, 3, 1)), scenarios=3), ValueError, "returns has shape"),
        (dict(returns=np.where(np.eye(5, 3) > 0, np.nan, 0)[::-1], scenarios=3), ValueError,
         r"returns\[2, 2\] is nan: must be finite"),
        (dict(returns=[["a", "b", "c"]], scenarios=3), TypeError, "returns must be a 2-D"),
        (dict(returns="", scenarios=3), ValueError, "returns is ''"),
        (dict(returns=np.zeros((50, 3)), paths=60, scenarios=3), ValueError,
         r"paths is 60: must be 0 or the returns' rows \(50\)"),
        (dict(returns=np.zeros((50, 3)), paths=-1, scenarios=3), ValueError, "paths is -1"),
        (dict(scenarios=3), TypeError, "paths is missing"),
        (dict(paths=0, scenarios=3), ValueError, "paths is 0: must be >= 1"),
    ]

    def test_bad_arguments_are_refused_before_any_call(self):
        for make in CLIENTS:
            with make("127.0.0.1:1") as client:
                for arguments, error, message in self.BAD:
                    with self.subTest(client=make.__name__, arguments=arguments):
                        with self.assertRaisesRegex(error, message):
                            client.price(**MARKET, **arguments)

    def test_server_refusals_name_the_field(self):
        refused = [  # (arguments, field)
            (dict(instruments=[{**self.CALL, "expiry": 0.5}], paths=10, scenarios=1),
             "instruments[0].expiry"),
            (dict(instruments=[{**self.CALL, "strike": -1}], paths=10, scenarios=1),
             "instruments[0].strike"),
            (dict(returns=returns(paths=20), antithetic=True, scenarios=3), "antithetic"),
            (dict(returns=np.full((20, 3), 25.0), scenarios=3), None),
        ]
        server = Server(ARGS.pricerd)
        try:
            for make in CLIENTS:
                with make(server.target) as client:
                    for arguments, field in refused:
                        with self.subTest(client=make.__name__, field=field):
                            with self.assertRaises(PricerError) as caught:
                                client.price(**MARKET, **arguments)
                            self.assertEqual(caught.exception.code,
                                             grpc.StatusCode.INVALID_ARGUMENT)
                            if field is not None:
                                self.assertEqual(caught.exception.field, field)
                            else:
                                self.assertTrue(caught.exception.field.startswith("returns"),
                                                caught.exception.field)
        finally:
            server.stop()


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
