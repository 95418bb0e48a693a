"""The Python client (client/python/pricer_client) against a real pricerd on
a loopback port; its NumPy results are checked against the CLI's files and
against float64 products of what the server returned, and against an
uninterrupted call when a server is killed mid-call."""

import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import WHOLE_BUDGET, Server  # noqa: E402  (the same fixture)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

import grpc  # noqa: E402
from pricer_client import Client, PricerError  # noqa: E402

ARGS = None
EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "client",
                       "python", "examples", "price_seed.py")


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
                              capture_output=True, text=True, timeout=300)
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

    def test_devices_and_errors(self):
        devices = self.client.devices()
        self.assertEqual([d.name for d in devices.devices], ["cpu0"])
        self.assertEqual(devices.devices[0].memory_budget_bytes, 1 << 30)
        with self.assertRaises(PricerError) as refused:
            self.client.price(issuers=3, paths=0, scenarios=5)
        self.assertEqual(refused.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("paths is 0", refused.exception.message)
        with self.assertRaises(PricerError) as unknown:
            self.client.price(issuers=3, paths=10, scenario_set="f" * 64)
        self.assertEqual(unknown.exception.code, grpc.StatusCode.NOT_FOUND)
        with self.assertRaises(ValueError):
            self.client.price(issuers=3, paths=10, scenarios=5, statistics=["median"])
        with self.assertRaises(ValueError):
            self.client.price(issuers=3, paths=10, scenarios=5, precision="fp16")
        # A cpu server accepts tensor-core precisions and computes in fp32.
        fp32 = self.client.price(issuers=3, paths=10, scenarios=5)
        tf32 = self.client.price(issuers=3, paths=10, scenarios=5, precision="tf32")
        np.testing.assert_array_equal(fp32.statistics["mean"], tf32.statistics["mean"])

    def test_example_script_runs(self):
        env = dict(os.environ)
        proc = subprocess.run([sys.executable, EXAMPLE, "--target", self.server.target,
                               "--scenarios", "500", "--paths", "1000"],
                              capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"average 99% VaR [0-9.]+")
        self.assertRegex(proc.stdout, r"SC of column \d+: 1000 paths")


def devices(server):
    """A server's (jobs queued or running, shards done over its devices)."""
    with Client(server.target) as client:
        reply = client.devices()
    return reply.queued_jobs, sum(d.shards_done for d in reply.devices)


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
                              capture_output=True, text=True, timeout=300)
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


class ServerKilledMidCallTest(unittest.TestCase):
    """price(split=2) over two servers, one of them killed with SIGKILL while
    its part runs: the part is asked again on the other, and the result is
    the same bytes as an uninterrupted call's."""

    # Several seconds on two cores in dozens of shards: a 24 MiB budget holds
    # shards of at most 768 of these columns.
    JOB = dict(issuers=4000, paths=500, seed=5, scenarios=24000, full=True,
               statistics=["mean", "var:0.99", "es:0.99"])

    def setUp(self):
        self.servers = [Server(ARGS.pricerd, device_memory="24MiB", flags=WHOLE_BUDGET)
                        for _ in range(2)]

    def tearDown(self):
        for server in self.servers:
            server.stop()

    def test_split_call_finishes_on_the_other_server(self):
        with Client(self.servers[0].target) as one:
            whole = one.price(**self.JOB)
        baseline = [devices(server)[1] for server in self.servers]
        outcome = {}

        def call():
            try:
                with Client("ipv4:" + ",".join(s.target for s in self.servers)) as both:
                    outcome["result"] = both.price(**self.JOB, split=2)
            except Exception as error:  # reported below, on the test's thread
                outcome["error"] = error

        with self.assertLogs("pricer_client.client", level="WARNING") as logs:
            thread = threading.Thread(target=call)
            thread.start()
            # A server that has done some of its part and not all of it.
            victim = None
            while victim is None and thread.is_alive():
                for server, before in zip(self.servers, baseline):
                    queued, done = devices(server)
                    if queued > 0 and done > before:
                        victim = server
                        break
                time.sleep(0.02)
            self.assertIsNotNone(victim, "the call ended before a server was killed: size it up")
            victim.proc.kill()
            victim.proc.wait()
            self.assertTrue(thread.is_alive(), "the call ended before the kill")
            thread.join(timeout=300)
        self.assertNotIn("error", outcome)
        self.assertTrue(any("retry 1 of 3" in line for line in logs.output), logs.output)
        split = outcome["result"]
        np.testing.assert_array_equal(split.full, whole.full)
        for name, values in whole.statistics.items():
            np.testing.assert_array_equal(split.statistics[name], values, err_msg=name)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
