"""The Python client (client/python/pricer_client) against a real pricerd on
a loopback port; its NumPy results are checked against the CLI's files and
against float64 products of what the server returned, and split calls over
two servers against one. (A server killed mid-call: python_retry_test.py.)"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import Server  # noqa: E402  (the same fixture)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)

import grpc  # noqa: E402
from pricer_client import Client, PricerError  # noqa: E402
from python_clients import BlockingAioClient, devices  # noqa: E402

ARGS = None


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.pricerd)
        cls.client = Client(cls.server.target)
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()
        cls.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def pricer(self, *args):
        proc = subprocess.run([ARGS.pricer, *args, "--target", self.server.target],
                              capture_output=True, text=True, timeout=scaled(300))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc

    def test_statistics_match_the_cli(self):
        items = ["mean", "stddev", "min", "max", "quantile:0.5", "var:0.99", "es:0.975"]
        result = self.client.price(issuers=30, paths=3000, seed=5, rate=0.01, maturity=2.0,
                                   scenarios=400, statistics=items)
        self.pricer("price", "--issuers", "30", "--paths", "3000", "--seed", "5", "--rate",
                    "0.01", "--maturity", "2", "--scenarios", "400", "--stats", ",".join(items),
                    "--stats-out", self.path("cli.csv"))
        cli = np.genfromtxt(self.path("cli.csv"), delimiter=",", names=True)
        self.assertEqual(set(result.statistics),
                         {"v0", "mean", "stddev", "min", "max", "quantile_0.5", "var_0.99",
                          "es_0.975"})
        for name, values in result.statistics.items():
            self.assertEqual(values.shape, (400,))
            # The CSV carries the shortest decimal that reads back the same double.
            np.testing.assert_array_equal(values, cli[name.replace(".", "")], err_msg=name)

    def test_moments_from_covariance_match_the_gemm_path_on_both_clients(self):
        common = dict(issuers=30, paths=3000, seed=5, rate=0.01, maturity=2.0, scenarios=400)
        gemm = self.client.price(statistics=["mean", "stddev"], **common).statistics
        for make in (Client, BlockingAioClient):
            with make(self.server.target) as client:  # default statistics: mean and stddev
                shortcut = client.price(moments_from_covariance=True, **common).statistics
                self.assertEqual(set(shortcut), {"v0", "mean", "stddev"})
                np.testing.assert_array_equal(shortcut["v0"], gemm["v0"])
                for name in ("mean", "stddev"):
                    np.testing.assert_allclose(shortcut[name], gemm[name], rtol=1e-5, err_msg=name)

    def test_full_result_into_an_array_and_a_memmap(self):
        rng = np.random.default_rng(3)
        spot = rng.uniform(5, 10, size=8)
        vol = rng.uniform(0.1, 0.5, size=8)
        a = rng.uniform(-1, 1, size=(8, 300))
        result = self.client.price(spot=spot, volatility=vol, paths=1500, seed=9, scenarios=a,
                                   statistics=None, full=True, terminal_prices=True)
        self.assertEqual(result.full.shape, (1500, 300))
        self.assertEqual(result.full.dtype, np.float32)
        st = result.terminal_prices.astype(np.float64)
        a32 = a.astype(np.float32).astype(np.float64)
        scale = np.abs(st) @ np.abs(a32)
        self.assertLess(np.max(np.abs(result.full - st @ a32) / scale), 1e-5)

        preallocated = np.zeros((1500, 300), dtype=np.float32, order="F")
        again = self.client.price(spot=spot, volatility=vol, paths=1500, seed=9, scenarios=a,
                                  statistics=None, full=preallocated)
        self.assertIs(again.full, preallocated)
        np.testing.assert_array_equal(preallocated, result.full)

        mapped = self.client.price(spot=spot, volatility=vol, paths=1500, seed=9, scenarios=a,
                                   statistics=None, full=self.path("sc.npy"), column_begin=17,
                                   column_end=211)
        del mapped
        loaded = np.load(self.path("sc.npy"))
        self.assertEqual(loaded.shape, (1500, 194))
        np.testing.assert_array_equal(loaded, result.full[:, 17:211])

    def test_upload_gives_the_cli_id_and_prices_like_inline(self):
        a = np.random.default_rng(4).uniform(0, 2, size=(12, 700))
        set_id = self.client.upload(a, chunk_bytes=4096)
        self.assertEqual(set_id, Client.scenario_set_id(a))
        np.save(self.path("a.npy"), a)
        self.assertEqual(self.pricer("upload", self.path("a.npy")).stdout.strip(), set_id)
        by_id = self.client.price(issuers=12, paths=800, seed=2, scenario_set=set_id,
                                  statistics=["mean", "var:0.99"], full=True)
        inline = self.client.price(issuers=12, paths=800, seed=2, scenarios=a,
                                   statistics=["mean", "var:0.99"], full=True)
        np.testing.assert_array_equal(by_id.full, inline.full)
        for name in ("v0", "mean", "var_0.99"):
            np.testing.assert_array_equal(by_id.statistics[name], inline.statistics[name])

    def test_devices_and_precisions(self):
        devices = self.client.devices()
        self.assertEqual([d.name for d in devices.devices], ["cpu0"])
        self.assertEqual(devices.devices[0].memory_budget_bytes, 1 << 30)
        # A cpu server accepts tensor-core precisions and computes in fp32.
        fp32 = self.client.price(issuers=3, paths=10, scenarios=5)
        tf32 = self.client.price(issuers=3, paths=10, scenarios=5, precision="tf32")
        np.testing.assert_array_equal(fp32.statistics["mean"], tf32.statistics["mean"])


class ArgumentsAndErrorsTest(unittest.TestCase):
    """What a caller gets wrong, in both clients: arguments refused before any
    call (the target is a port nobody listens on, so a call would end
    UNAVAILABLE instead), and the server's refusals with the field they name."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.pricerd)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    BAD = [  # (arguments, exception, what the message must name)
        (dict(spot=[1, 2], paths=10, scenarios=3), ValueError, "volatility is missing"),
        (dict(volatility=[0.1], paths=10, scenarios=3), ValueError, "spot is missing"),
        (dict(spot=[1, 2], volatility=[0.1], paths=10, scenarios=3), ValueError,
         "spot has 2 values, volatility 1"),
        (dict(spot=[1, float("nan")], volatility=[0.1, 0.2], paths=10, scenarios=3),
         ValueError, r"spot\[1\] is nan"),
        (dict(issuers=3, paths=0, scenarios=5), ValueError, "paths is 0"),
        (dict(issuers=3, paths=2.5, scenarios=5), TypeError, "paths must be an integer"),
        (dict(issuers=3, paths=10, scenarios=5, maturity=0), ValueError, "maturity is 0"),
        (dict(issuers=3, paths=10, scenarios=5, seed=-1), ValueError, "seed is -1"),
        (dict(issuers=3, paths=10, scenarios=np.ones((2, 4))), ValueError,
         r"scenarios has shape \(2, 4\): must be \(3, M\)"),
        (dict(issuers=3, paths=10), ValueError, "no scenarios"),
        (dict(paths=10, scenarios=5), ValueError, "no market"),
        (dict(issuers=3, paths=10, scenarios=5, correlation=np.eye(2)), ValueError,
         "correlation has shape"),
        (dict(issuers=3, paths=10, scenarios=5, column_begin=4, column_end=2), ValueError,
         "column_end is 2"),
        (dict(issuers=3, paths=10, scenarios=5, statistics=["median"]), ValueError,
         "'median' is not one of"),
        (dict(issuers=3, paths=10, scenarios=5, statistics="mean"), TypeError,
         "statistics must be a list"),
        (dict(issuers=3, paths=10, scenarios=5, statistics=["var:1"]), ValueError,
         "'var:1': the level must be in \\(0, 1\\)"),
        (dict(issuers=3, paths=10, scenarios=5, statistics=["var:.99", "var:0.990"]),
         ValueError, r"'var:.99' and 'var:0.990' are the same item \(var_0.99\)"),
        (dict(issuers=3, paths=10, scenarios=5, statistics=None), ValueError,
         "nothing to return"),
        (dict(issuers=3, paths=10, scenarios=5, full=np.zeros((10, 4), np.float32)),
         ValueError, r"full is a float32 array of shape \(10, 4\)"),
        (dict(issuers=3, paths=10, scenarios=5, precision="fp16"), ValueError, "precision"),
        (dict(issuers=3, paths=10, scenarios=5, priority=101), ValueError, "priority is 101"),
        (dict(issuers=3, paths=10, scenarios=5, split=0), ValueError, "split is 0"),
        (dict(issuers=3, paths=10, scenarios=5, timeout=-1), ValueError, "timeout is -1"),
        (dict(issuers=3, paths=10, scenarios=5, progress=3), TypeError, "progress must be"),
        (dict(issuers=3, paths=10, scenarios=5, sceanrios=5), TypeError, "sceanrios"),
    ]

    def test_bad_arguments_are_refused_before_any_call(self):
        for make in (Client, BlockingAioClient):
            with make("127.0.0.1:1") as client:
                for arguments, error, message in self.BAD:
                    with self.subTest(client=make.__name__, arguments=arguments):
                        with self.assertRaisesRegex(error, message):
                            client.price(**arguments)
                with self.assertRaisesRegex(ValueError, r"matrix has shape \(3,\)"):
                    client.upload(np.ones(3))

    def test_server_refusals_name_the_field(self):
        refused = [  # (arguments, code, field)
            (dict(spot=[5, 6], volatility=[0.2, -1], paths=10, scenarios=3),
             grpc.StatusCode.INVALID_ARGUMENT, "market.explicit.volatility[1]"),
            (dict(issuers=3, paths=10, scenarios=3, rate=2.0),
             grpc.StatusCode.INVALID_ARGUMENT, "rate"),
            (dict(issuers=3, paths=2_000_000, scenarios=3),
             grpc.StatusCode.INVALID_ARGUMENT, "paths"),
            (dict(issuers=3, paths=10, scenario_set="f" * 64), grpc.StatusCode.NOT_FOUND, None),
            (dict(issuers=3, paths=10, scenarios=3, statistics=["mean", "es:0.975"],
                  moments_from_covariance=True),
             grpc.StatusCode.INVALID_ARGUMENT, "output.statistics.es"),
        ]
        for make in (Client, BlockingAioClient):
            with make(self.server.target) as client:
                for arguments, code, field in refused:
                    with self.subTest(client=make.__name__, arguments=arguments):
                        with self.assertRaises(PricerError) as error:
                            client.price(**arguments)
                        self.assertEqual(error.exception.code, code)
                        self.assertEqual(error.exception.field, field)
                        if field is not None:
                            self.assertTrue(error.exception.message.startswith(field + " is "),
                                            error.exception.message)

    def test_progress_and_the_documented_example(self):
        """The module docstring's example, run as written (up to its pandas
        line; pandas is not a dependency) against this server and at 2,000
        columns instead of 20,000; then progress reported up to every column."""
        import pricer_client
        example = pricer_client.__doc__.split("\n\n")[1]
        self.assertIn('result.statistics["var_0.99"]', example)
        code = textwrap.dedent(example.split("result.to_pandas()")[0])
        code = code.replace('"localhost:50051"', repr(self.server.target))
        self.assertIn("scenarios=20_000", code)
        namespace = {}
        exec(code.replace("scenarios=20_000", "scenarios=2_000"), namespace)
        var = namespace["result"].statistics["var_0.99"]
        self.assertEqual(var.shape, (2000,))
        self.assertTrue((var > 0).all(), "a 99% VaR of a long portfolio is a loss")
        for make in (Client, BlockingAioClient):
            seen = []
            with make(self.server.target) as client:
                result = client.price(issuers=50, paths=2000, scenarios=3000, seed=42, rate=0.02,
                                      maturity=1.0, statistics=["mean", "var:0.99"],
                                      progress=lambda done, total: seen.append((done, total)))
            self.assertEqual(result.statistics["var_0.99"].shape, (3000,))
            self.assertFalse(np.isnan(result.statistics["var_0.99"]).any())
            self.assertEqual(seen[-1], (3000, 3000))
            self.assertEqual([done for done, _ in seen], sorted({done for done, _ in seen}))


class SplitAcrossServersTest(unittest.TestCase):
    """Two real servers behind one round-robin target."""

    @classmethod
    def setUpClass(cls):
        cls.servers = [Server(ARGS.pricerd), Server(ARGS.pricerd)]
        cls.target = "ipv4:" + ",".join(s.target for s in cls.servers)
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        for server in cls.servers:
            server.stop()
        cls.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def shards_done(self):
        return [devices(server)[1] for server in self.servers]

    def run_pricer(self, target, *args):
        proc = subprocess.run([ARGS.pricer, "price", "--target", target, *args],
                              capture_output=True, text=True, timeout=scaled(300))
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_cli_split_equals_one_server_and_uses_both(self):
        common = ["--issuers", "40", "--paths", "2000", "--scenarios", "3000", "--seed", "3",
                  "--stats", "mean,var:0.99,es:0.99"]
        self.run_pricer(self.servers[0].target, *common, "--stats-out", self.path("one.csv"),
                        "--full-out", self.path("one.npy"), "--prices-out", self.path("st1.npy"))
        before = self.shards_done()
        self.run_pricer(self.target, *common, "--split", "4", "--stats-out",
                        self.path("split.csv"), "--full-out", self.path("split.npy"),
                        "--prices-out", self.path("st4.npy"))
        after = self.shards_done()
        for a, b in (("one.npy", "split.npy"), ("one.csv", "split.csv"), ("st1.npy", "st4.npy")):
            with open(self.path(a), "rb") as f, open(self.path(b), "rb") as g:
                self.assertEqual(f.read(), g.read(), f"{a} and {b} differ")
        self.assertTrue(all(b > a for a, b in zip(before, after)),
                        f"shards done before {before}, after {after}: a server did no part")

    def test_python_split_equals_unsplit_and_uses_both(self):
        with Client(self.servers[0].target) as one:
            whole = one.price(issuers=20, paths=1500, seed=8, scenarios=2000,
                              statistics=["mean", "quantile:0.5", "var:0.975"], full=True)
        before = self.shards_done()
        with Client(self.target) as both:
            split = both.price(issuers=20, paths=1500, seed=8, scenarios=2000,
                               statistics=["mean", "quantile:0.5", "var:0.975"], full=True,
                               split=4)
        after = self.shards_done()
        np.testing.assert_array_equal(split.full, whole.full)
        for name, values in whole.statistics.items():
            np.testing.assert_array_equal(split.statistics[name], values, err_msg=name)
        self.assertTrue(all(b > a for a, b in zip(before, after)),
                        f"shards done before {before}, after {after}: a server did no part")


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
