"""End to end: how `pricer` reads its command line, against a real pricerd on
a loopback port. An explicit flag beats its environment variable; every usage
error exits 2 and nothing else leaks CLI11's own codes; --stats items are named
by their level's shortest fixed decimal and duplicates are refused; and the
flags --priority, --timeout and --json."""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import Server  # noqa: E402

ARGS = None
DEAD = "127.0.0.1:1"  # nothing listens there
JOB = ["--issuers", "3", "--paths", "1000", "--scenarios", "20", "--seed", "1"]
# A job of a few seconds on two cores.
LONG_JOB = ["--issuers", "2000", "--paths", "2000", "--scenarios", "200000", "--seed", "1",
            "--stats", "mean"]
TOKEN = "s3cret-alice"


def cli(*args, env=None):
    """The CLI with `args`; `env` adds variables to a clean copy of ours."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PRICER_")}
    environ.update(env or {})
    return subprocess.run([ARGS.pricer, *args], capture_output=True, text=True, timeout=scaled(300),
                          env=environ)


def price_requests(server):
    """How many Price calls the server has logged: accepted jobs and refusals."""
    with open(server.log.name) as f:
        log = f.read()
    return len(re.findall(r"paths, columns \[|refused a price request", log))


class UsageTest(unittest.TestCase):
    """One pricerd whose tokens file names alice (token TOKEN, max priority 10)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        tokens = cls.path("tokens")
        with open(tokens, "w") as f:
            f.write(f"alice {TOKEN} 10\n")
        os.chmod(tokens, 0o600)
        cls.token_file = cls.path("alice.token")
        with open(cls.token_file, "w") as f:
            f.write(TOKEN + "\n")
        cls.wrong_token_file = cls.path("wrong.token")
        with open(cls.wrong_token_file, "w") as f:
            f.write("not-the-token\n")
        cls.server = Server(ARGS.pricerd, flags=("--auth-tokens-file", tokens))
        cls.target = cls.server.target

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.dir.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir.name, name)

    def price(self, *args, env=None, code=0):
        """`pricer price args` as alice (--token-file before the verb)."""
        proc = cli("--token-file", self.token_file, "price", *args, env=env)
        self.assertEqual(proc.returncode, code, proc.stderr)
        return proc

    def test_explicit_target_beats_pricer_target(self):
        dead = {"PRICER_TARGET": DEAD}
        # Before the verb and after it, on every verb that calls the server.
        self.price("--target", self.target, *JOB, env=dead)
        proc = cli("--target", self.target, "--token-file", self.token_file, "price", *JOB,
                   env=dead)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("priced 20 columns", proc.stdout)
        proc = cli("devices", "--target", self.target, "--token-file", self.token_file, env=dead)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = cli("health", "--target", self.target, env=dead)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # Without the flag the variable is used, and beats the default.
        self.price(*JOB, env={"PRICER_TARGET": self.target})
        proc = self.price(*JOB, env=dead, code=1)
        self.assertIn("14 UNAVAILABLE", proc.stderr)

    def test_explicit_token_file_beats_the_token_variables(self):
        wrong = {"PRICER_TOKEN_FILE": self.wrong_token_file, "PRICER_TOKEN": "not-the-token"}
        for where in ("before", "after"):
            args = ["--token-file", self.token_file]
            command = [*args, "price", "--target", self.target, *JOB] if where == "before" \
                else ["price", "--target", self.target, *JOB, *args]
            proc = cli(*command, env=wrong)
            self.assertEqual(proc.returncode, 0, f"--token-file {where} the verb: {proc.stderr}")
        # PRICER_TOKEN_FILE beats PRICER_TOKEN; each is used without the flag.
        proc = cli("price", "--target", self.target, *JOB,
                   env={"PRICER_TOKEN_FILE": self.token_file, "PRICER_TOKEN": "not-the-token"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = cli("price", "--target", self.target, *JOB, env={"PRICER_TOKEN": TOKEN})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = cli("price", "--target", self.target, *JOB, env=wrong)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("16 UNAUTHENTICATED", proc.stderr)

    def test_usage_errors_exit_2(self):
        before = price_requests(self.server)
        bad = {
            "an unknown flag": ["price", "--no-such-flag", *JOB],
            "a value out of range": ["price", "--split", "0", *JOB],
            "a value that is not a number": ["price", "--paths", "many", *JOB],
            "no verb": [],
            "an unknown verb": ["prices", *JOB],
            "an extra positional": ["price", "extra", *JOB],
            "upload without its file": ["upload"],
            "a flag without its value": ["price", *JOB, "--seed"],
            "a priority out of range": ["price", "--priority", "101", *JOB],
            "a timeout that is not positive": ["price", "--timeout", "0", *JOB],
            "a duplicated --stats item": ["price", *JOB, "--stats", "var:.99,var:0.990"],
            "an output name too long": ["price", *JOB, "--stats-out", "/tmp/" + "a" * 300 + "/s"],
            "a market file that is missing": ["price", "--market-file", self.path("none.csv"),
                                              "--paths", "10", "--scenarios", "5"],
        }
        for what, args in bad.items():
            proc = cli("--target", self.target, "--token-file", self.token_file, *args)
            self.assertEqual(proc.returncode, 2, f"{what}: {args}: {proc.stderr}")
            self.assertTrue(proc.stderr.strip(), f"{what}: says nothing")
        self.assertEqual(price_requests(self.server), before, "a usage error reached the server")
        for ok in (["--help"], ["price", "--help"], ["--version"], ["devices", "--help"]):
            proc = cli(*ok)
            self.assertEqual(proc.returncode, 0, f"{ok}: {proc.stderr}")
            self.assertTrue(proc.stdout.strip())

    def stats_header(self, stats):
        out = self.path("stats.csv")
        self.price("--target", self.target, *JOB, "--stats", stats, "--stats-out", out)
        with open(out) as f:
            return f.readline().strip().split(",")

    def test_stats_items_are_named_by_their_shortest_fixed_level(self):
        self.assertEqual(self.stats_header("var:.99,es:0.975,var:1e-5,quantile:0,quantile:1.0,"
                                           "es:0.9900,mean"),
                         ["column", "v0", "var_0.99", "es_0.975", "var_0.00001", "quantile_0",
                          "quantile_1", "es_0.99", "mean"])

    def test_stats_duplicates_and_bad_levels_are_refused_before_any_call(self):
        before = price_requests(self.server)
        refused = {
            "var:.99,mean,var:0.990": "--stats: 'var:.99' and 'var:0.990' are the same item "
                                      "(var_0.99)",
            "mean,max,mean": "--stats: 'mean' and 'mean' are the same item (mean)",
            "es:1": "--stats: 'es:1': the level must be in (0, 1)",
            "var:0": "--stats: 'var:0': the level must be in (0, 1)",
            "quantile:1.5": "--stats: 'quantile:1.5': the level must be in [0, 1]",
            "quantile:-0.1": "--stats: 'quantile:-0.1': the level must be in [0, 1]",
            "var:nan": "--stats: 'var:nan': the level must be in (0, 1)",
        }
        for stats, message in refused.items():
            proc = self.price("--target", self.target, *JOB, "--stats", stats, code=2)
            self.assertIn(message, proc.stderr)
        self.assertEqual(price_requests(self.server), before)

    def test_priority_is_sent_and_checked(self):
        self.price("--target", self.target, *JOB, "--priority", "10")
        self.price("--target", self.target, *JOB, "--priority", "-100")
        proc = self.price("--target", self.target, *JOB, "--priority", "11", code=1)
        self.assertIn("7 PERMISSION_DENIED", proc.stderr)
        self.assertIn("priority is 11", proc.stderr)
        proc = self.price("--target", self.target, *JOB, "--priority", "-101", code=2)
        self.assertIn("--priority", proc.stderr)

    def test_timeout_ends_the_run_with_deadline_exceeded(self):
        start = time.monotonic()
        proc = self.price("--target", self.target, *LONG_JOB, "--timeout", "0.5", code=1)
        self.assertLess(time.monotonic() - start, scaled(5))  # the job itself takes hours
        self.assertIn("4 DEADLINE_EXCEEDED", proc.stderr)
        # The retries of an unreachable server are inside the deadline too.
        # Without it they sleep 0.2 + 0.4 + 0.8 s and end UNAVAILABLE; with it
        # the run is shorter by most of those sleeps, which a slow machine
        # does not stretch.
        start = time.monotonic()
        proc = self.price("--target", DEAD, *JOB, code=1)
        without_deadline = time.monotonic() - start
        self.assertIn("14 UNAVAILABLE", proc.stderr)
        start = time.monotonic()
        proc = self.price("--target", DEAD, *JOB, "--timeout", "0.3", code=1)
        self.assertLess(time.monotonic() - start, without_deadline - 0.5)
        self.assertIn("4 DEADLINE_EXCEEDED", proc.stderr)
        # A timeout the job fits in changes nothing.
        self.price("--target", self.target, *JOB, "--timeout", "60")

    def test_json_summary_is_one_flat_object(self):
        out = self.path("json_stats.csv")
        full = self.path("json_full.npy")
        proc = self.price("--target", self.target, *JOB, "--stats-out", out, "--full-out", full,
                          "--json")
        summary = json.loads(proc.stdout)
        self.assertEqual(summary["columns_priced"], 20)
        self.assertEqual(summary["columns_from_journal"], 0)
        self.assertEqual(summary["column_begin"], 0)
        self.assertEqual(summary["column_end"], 20)
        self.assertEqual(summary["paths"], 1000)
        self.assertEqual(summary["issuers"], 3)
        self.assertEqual(summary["flops"], 2 * 1000 * 3 * 20)
        self.assertGreater(summary["wall_seconds"], 0)
        self.assertGreater(summary["server_seconds"], 0)
        self.assertAlmostEqual(summary["gflops_per_second"],
                               summary["flops"] / summary["wall_seconds"] / 1e9, places=6)
        self.assertEqual(summary["stats_out"], out)
        self.assertEqual(summary["full_out"], full)
        self.assertIsNone(summary["prices_out"])
        for value in summary.values():
            self.assertNotIsInstance(value, (dict, list))


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
