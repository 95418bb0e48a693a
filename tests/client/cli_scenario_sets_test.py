"""End to end: `pricer upload` and `pricer price --scenario-set` against a
real pricerd on a loopback port (the id is the SHA-256 of the matrix; a set
prices like the same matrix inline), and a server whose request limit sends
large inline matrices to UploadScenarios instead."""

import hashlib
import os
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import CliTestCase, run_cli  # noqa: E402

ARGS = None


class CliScenarioSetTest(CliTestCase):
    def upload(self, path, target=None):
        return subprocess.run([ARGS.pricer, "upload", "--target", target or self.server.target,
                               path], capture_output=True, text=True, timeout=scaled(300))

    def test_upload_prints_the_sha256_id_once(self):
        rng = np.random.default_rng(31)
        a = rng.uniform(-1.0, 1.0, size=(9, 4000))  # float64, C order: the CLI converts
        np.save(self.path("up_a.npy"), a)
        first = self.upload(self.path("up_a.npy"))
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertRegex(first.stdout, r"\A[0-9a-f]{64}\n\Z")
        set_id = first.stdout.strip()
        self.assertIn("9 x 4000, 144000 bytes", first.stderr)
        self.assertNotIn("already stored", first.stderr)
        # The id is SHA-256 over rows, columns (int64 LE) and the float32 values
        # in column-major order.
        digest = hashlib.sha256(np.array([9, 4000], dtype="<i8").tobytes()
                                + a.astype("<f4").tobytes(order="F")).hexdigest()
        self.assertEqual(set_id, digest)
        again = self.upload(self.path("up_a.npy"))
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout, first.stdout)
        self.assertIn("already stored", again.stderr)
        # The same values as float32 and Fortran order: the same set.
        np.save(self.path("up_a32.npy"), np.asfortranarray(a.astype(np.float32)))
        third = self.upload(self.path("up_a32.npy"))
        self.assertEqual(third.returncode, 0, third.stderr)
        self.assertEqual(third.stdout, first.stdout)

    def test_price_scenario_set_matches_float64_product(self):
        rng = np.random.default_rng(32)
        n, m, p = 16, 300, 1200
        a = rng.uniform(0.0, 2.0, size=(n, m)).astype(np.float32)
        np.save(self.path("set_a.npy"), a)
        up = self.upload(self.path("set_a.npy"))
        self.assertEqual(up.returncode, 0, up.stderr)
        set_id = up.stdout.strip()
        proc = self.pricer("--issuers", str(n), "--paths", str(p), "--seed", "4",
                           "--scenario-set", set_id, "--full-out", self.path("set_sc.npy"),
                           "--prices-out", self.path("set_st.npy"))
        self.assertRegex(proc.stdout, r"priced 300 columns x 1200 paths x 16 issuers")
        sc = np.load(self.path("set_sc.npy"))
        st = np.load(self.path("set_st.npy"))
        self.assertEqual(sc.shape, (p, m))
        self.assertEqual(st.shape, (p, n))
        st64, a64 = st.astype(np.float64), a.astype(np.float64)
        scale = np.abs(st64) @ np.abs(a64)
        self.assertLess(np.max(np.abs(sc - st64 @ a64) / scale), 1e-5)
        # The same matrix inline gives the same bytes.
        self.pricer("--issuers", str(n), "--paths", str(p), "--seed", "4",
                    "--scenarios-file", self.path("set_a.npy"),
                    "--full-out", self.path("inline_sc.npy"))
        np.testing.assert_array_equal(np.load(self.path("inline_sc.npy")), sc)
        # A column range of the set.
        self.pricer("--issuers", str(n), "--paths", str(p), "--seed", "4",
                    "--scenario-set", set_id, "--column-begin", "40", "--column-end", "77",
                    "--full-out", self.path("set_part.npy"))
        np.testing.assert_array_equal(np.load(self.path("set_part.npy")), sc[:, 40:77])

    def test_unknown_scenario_set_exits_nonzero(self):
        unknown = "0" * 64
        proc = self.pricer("--issuers", "3", "--paths", "100", "--scenario-set", unknown,
                           check=False)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("NOT_FOUND", proc.stderr)
        self.assertIn(unknown, proc.stderr)
        self.assertEqual(proc.stdout, "")


class RequestLimitTest(CliTestCase):
    """A server that accepts requests of at most 1 MiB."""

    server_flags = ("--max-request-bytes", "1MiB")

    def test_large_inline_matrix_is_refused_naming_upload_and_priced_as_a_set(self):
        n, m = 50, 7500  # 1.5 MB of float32
        a = np.random.default_rng(33).uniform(0.0, 1.0, size=(n, m)).astype(np.float32)
        path = os.path.join(self.dir.name, "big.npy")
        np.save(path, a)
        common = ["price", "--target", self.server.target, "--issuers", str(n), "--paths", "200",
                  "--column-end", "5"]
        proc = run_cli(ARGS.pricer, *common, "--scenarios-file", path)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("RESOURCE_EXHAUSTED", proc.stderr)
        self.assertIn("over this server's limit of 1048576 bytes", proc.stderr)
        self.assertIn("UploadScenarios", proc.stderr)
        up = run_cli(ARGS.pricer, "upload", "--target", self.server.target, path)
        self.assertEqual(up.returncode, 0, up.stderr)
        proc = run_cli(ARGS.pricer, *common, "--scenario-set", up.stdout.strip())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"priced 5 columns x 200 paths x 50 issuers")

if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
