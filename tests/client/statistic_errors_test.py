"""The Monte Carlo errors of the statistics in both clients, against a real
pricerd: `pricer price --errors` writes each statistic's errors right after
it in the CSV (mean_se, var_0.99_lo, var_0.99_hi, es_0.975_se, ...), to the
bit what the Python clients return with errors=True; every interval holds its
statistic, every standard error is positive, a lower confidence narrows the
intervals, and the statistics themselves are those of a run without errors.
Bad --error-confidence values and errors= arguments are refused before any
call."""

import os
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import CliTestCase  # noqa: E402  (the same fixture)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)

import grpc  # noqa: E402
from pricer_client import Client, PricerError  # noqa: E402
from pricer_client._proto import pricer_pb2  # noqa: E402
from pricer_client._requests import statistics_selection, with_errors  # noqa: E402
from pricer_client._results import Results  # noqa: E402
from python_clients import BlockingAioClient  # noqa: E402

ARGS = None

ITEMS = ["mean", "stddev", "min", "max", "quantile:0.05", "quantile:0.5", "var:0.99",
         "es:0.975"]
# Each item's CSV columns with --errors.
COLUMNS = ["v0", "mean", "mean_se", "stddev", "stddev_se", "min", "max",
           "quantile_0.05", "quantile_0.05_lo", "quantile_0.05_hi",
           "quantile_0.5", "quantile_0.5_lo", "quantile_0.5_hi",
           "var_0.99", "var_0.99_lo", "var_0.99_hi", "es_0.975", "es_0.975_se"]
PLAIN = ["v0", "mean", "stddev", "min", "max", "quantile_0.05", "quantile_0.5", "var_0.99",
         "es_0.975"]
INTERVALS = ["quantile_0.05", "quantile_0.5", "var_0.99"]
STANDARD_ERRORS = ["mean_se", "stddev_se", "es_0.975_se"]
# Generated issuers and 300 scenario columns.
JOB = dict(issuers=20, paths=4000, seed=3, rate=0.01, scenarios=300)
CLI_JOB = ["--issuers", "20", "--paths", "4000", "--seed", "3", "--rate", "0.01",
           "--scenarios", "300", "--stats", ",".join(ITEMS)]


def read_csv(path):
    """(the header's names after `column`, name -> float64 array, the text)."""
    with open(path) as f:
        text = f.read()
    lines = text.splitlines()
    names = lines[0].split(",")
    rows = np.array([[float(cell) for cell in line.split(",")] for line in lines[1:]])
    return names[1:], {name: rows[:, k + 1] for k, name in enumerate(names[1:])}, text


class StatisticErrorsTest(CliTestCase):

    def pricer(self, *args):
        return subprocess.run([ARGS.pricer, "price", "--target", self.server.target, *args],
                              capture_output=True, text=True, timeout=scaled(300))

    def cli_csv(self, name, *flags):
        """The CLI's statistics CSV of JOB with `flags`: read_csv of it."""
        proc = self.pricer(*CLI_JOB, *flags, "--stats-out", self.path(name))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return read_csv(self.path(name))

    def test_the_cli_csv_is_what_both_python_clients_write(self):
        names, cli, text = self.cli_csv("cli.csv", "--errors")
        self.assertEqual(names, COLUMNS)
        for make in (Client, BlockingAioClient):
            with self.subTest(client=make.__name__), make(self.server.target) as client:
                result = client.price(**JOB, statistics=ITEMS, errors=True)
                self.assertEqual(list(result.statistics), COLUMNS)
                result.write_csv(self.path("py.csv"))
                py_names, py, py_text = read_csv(self.path("py.csv"))
                self.assertEqual(py_names, COLUMNS)
                for name in COLUMNS:
                    # Parsed back: the same doubles, bit for bit, as returned.
                    self.assertEqual(py[name].tobytes(), cli[name].tobytes(), name)
                    self.assertEqual(result.statistics[name].tobytes(), cli[name].tobytes(),
                                     name)
                self.assertEqual(py_text, text)
        # At another confidence too.
        _, _, half = self.cli_csv("cli_half.csv", "--errors", "--error-confidence", "0.5")
        with Client(self.server.target) as client:
            client.price(**JOB, statistics=ITEMS, errors=True,
                         error_confidence=0.5).write_csv(self.path("py_half.csv"))
        self.assertEqual(read_csv(self.path("py_half.csv"))[2], half)

    def test_intervals_hold_their_statistic_and_standard_errors_are_positive(self):
        _, cli, _ = self.cli_csv("bounds.csv", "--errors")
        for name in INTERVALS:
            lo, value, hi = cli[name + "_lo"], cli[name], cli[name + "_hi"]
            self.assertTrue(np.all(lo <= value), name)
            self.assertTrue(np.all(value <= hi), name)
            self.assertTrue(np.all(lo < hi), name)  # 4000 distinct paths: a real interval
        for name in STANDARD_ERRORS:
            self.assertTrue(np.all(cli[name] > 0), name)
            self.assertTrue(np.all(np.isfinite(cli[name])), name)

    def test_without_errors_the_csv_is_unchanged(self):
        names, plain, _ = self.cli_csv("plain.csv")
        self.assertEqual(names, PLAIN)
        # Asking for the errors changes none of the statistics.
        _, errors, _ = self.cli_csv("with_errors.csv", "--errors")
        for name in PLAIN:
            self.assertEqual(plain[name].tobytes(), errors[name].tobytes(), name)
        with Client(self.server.target) as client:
            self.assertEqual(list(client.price(**JOB, statistics=ITEMS).statistics), PLAIN)

    def test_a_lower_confidence_gives_narrower_intervals(self):
        _, half, _ = self.cli_csv("half.csv", "--errors", "--error-confidence", "0.5")
        _, most, _ = self.cli_csv("most.csv", "--errors", "--error-confidence", "0.99")
        _, default, default_text = self.cli_csv("default.csv", "--errors")
        for name in INTERVALS:
            narrow = half[name + "_hi"] - half[name + "_lo"]
            wide = most[name + "_hi"] - most[name + "_lo"]
            self.assertTrue(np.all(narrow <= wide), name)
            self.assertLess(narrow.sum(), wide.sum(), name)
            self.assertTrue(np.all(half[name + "_lo"] >= most[name + "_lo"]), name)
            self.assertTrue(np.all(half[name + "_hi"] <= most[name + "_hi"]), name)
        for name in PLAIN + STANDARD_ERRORS:  # neither depends on the confidence
            self.assertEqual(half[name].tobytes(), most[name].tobytes(), name)
        # The default is 0.95.
        self.assertEqual(self.cli_csv("95.csv", "--errors", "--error-confidence", "0.95")[2],
                         default_text)

    def test_a_bad_error_confidence_exits_2_naming_the_flag(self):
        for value in ("0", "1", "1.5", "-0.1", "nan"):
            with self.subTest(value=value):
                proc = self.pricer(*CLI_JOB, "--errors", "--error-confidence", value)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn("--error-confidence", proc.stderr)
                self.assertIn("must be in (0, 1)", proc.stderr)
        proc = self.pricer(*CLI_JOB, "--errors", "--error-confidence", "high")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--error-confidence", proc.stderr)
        proc = self.pricer(*CLI_JOB, "--error-confidence", "0.9")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--error-confidence needs --errors", proc.stderr)

    BAD = [  # (arguments, exception, what the message must name)
        (dict(errors="yes"), TypeError, "errors must be True or False, not 'yes'"),
        (dict(errors=1), TypeError, "errors must be True or False, not 1"),
        (dict(errors=True, error_confidence=1), ValueError,
         r"error_confidence is 1: must be in \(0, 1\)"),
        (dict(errors=True, error_confidence=0.0), ValueError, "error_confidence is 0.0"),
        (dict(errors=True, error_confidence=float("nan")), ValueError,
         "error_confidence is nan"),
        (dict(error_confidence=1.5), ValueError, "error_confidence is 1.5"),
        (dict(errors=True, error_confidence="0.9"), TypeError,
         "error_confidence must be a number, not '0.9'"),
        (dict(errors=True, error_confidence=True), TypeError,
         "error_confidence must be a number"),
        (dict(errors=True, statistics=None, full=True), ValueError,
         "errors=True needs statistics"),
    ]

    def test_bad_errors_arguments_are_refused_before_any_call(self):
        for make in (Client, BlockingAioClient):
            with make("127.0.0.1:1") as client:  # nothing listens there
                for arguments, error, message in self.BAD:
                    with self.subTest(client=make.__name__, arguments=arguments):
                        with self.assertRaisesRegex(error, message):
                            client.price(issuers=3, paths=10, scenarios=5, **arguments)


class ResultsTest(unittest.TestCase):
    """A reply without the errors asked for contradicts the request."""

    def test_a_chunk_without_the_errors_asked_for_is_internal(self):
        _, named = statistics_selection(["mean", "var:0.99"])
        results = Results(with_errors(named), False, (4, 6))
        results.accepted(pricer_pb2.JobAccepted(paths=10, issuers=2, column_begin=4,
                                                column_end=6))
        chunk = pricer_pb2.ResultChunk(column_begin=4, column_end=6, rows=10)
        chunk.statistics.v0.extend([1, 2])
        chunk.statistics.mean.extend([3, 4])
        chunk.statistics.var.add(level=0.99, values=[5, 6], lower=[4, 5], upper=[6, 7])
        with self.assertRaises(PricerError) as error:
            results.chunk(chunk)
        self.assertEqual(error.exception.code, grpc.StatusCode.INTERNAL)
        self.assertEqual(error.exception.message, "the server sent no mean_se for 2 columns")
        chunk.statistics.mean_standard_error.extend([0.5, 0.25])
        del chunk.statistics.var[0].upper[1]
        with self.assertRaisesRegex(PricerError, "no var_0.99_hi for 2 columns"):
            results.chunk(chunk)
        chunk.statistics.var[0].upper.append(7)
        results.chunk(chunk)
        self.assertEqual(list(results.result().statistics["var_0.99_hi"]), [6, 7])
        self.assertEqual(list(results.result().statistics["mean_se"]), [0.5, 0.25])


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
