"""End to end: a real pricerd on a loopback port, the real `pricer` CLI, and
NumPy reading what the CLI writes. The references are computed here in float64
from the files themselves (ST from --prices-out, A from the .npy we send)."""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

ARGS = None


class Server:
    """pricerd on 127.0.0.1, a free port chosen by the kernel."""

    def __init__(self, pricerd):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [pricerd, "--listen", "127.0.0.1:0", "--devices", "cpu", "--device-memory", "1GiB"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        self.port = None
        while self.port is None and time.time() < deadline:
            time.sleep(0.05)
            with open(self.log.name) as f:
                m = re.search(r"\(port (\d+)\)", f.read())
            if m:
                self.port = int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError("pricerd exited: " + open(self.log.name).read())
        if self.port is None:
            raise RuntimeError("pricerd did not report its port")
        self.target = "127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        os.unlink(self.log.name)


class CliNumpyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.pricerd)
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def pricer(self, *args, check=True):
        proc = subprocess.run([ARGS.pricer, "price", "--target", self.server.target, *args],
                              capture_output=True, text=True, timeout=300)
        if check:
            self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc

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

        # The statistics CSV describes the same SC.
        stats = np.genfromtxt(self.path("stats.csv"), delimiter=",", names=True)
        np.testing.assert_array_equal(stats["column"], np.arange(m))
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

    def test_seed_preset_at_reduced_scale(self):
        proc = self.pricer("--preset", "seed", "--scenarios", "300", "--paths", "500",
                           "--stats-out", self.path("seed.csv"))
        self.assertRegex(proc.stdout, r"priced 300 columns x 500 paths x 500 issuers")
        stats = np.genfromtxt(self.path("seed.csv"), delimiter=",", names=True)
        self.assertEqual(len(stats), 300)
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

    def test_devices_lists_cpu0(self):
        proc = subprocess.run([ARGS.pricer, "devices", "--target", self.server.target],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"cpu0\s+cpu\s+1073741824\s+\d+\s+\d+\s+\d+")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pricerd", required=True)
    parser.add_argument("--pricer", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
