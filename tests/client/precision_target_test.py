"""Pricing to a target precision end to end, against a real pricerd: a
targeted request's columns come back priced with P x 2^k paths, at most
max_paths; target_met says whether each column's own error (in the result)
meets the target; a column is bit-identical to a direct request with its
paths over that column alone (and short of the target with half of them);
the blocking and asyncio clients, and split parts, return the same bits;
the CLI's --error-target CSV is what write_csv writes; and the server
refuses what only it checks, naming the field."""

import os
import sys
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import CliTestCase  # noqa: E402  (the same fixture)
from python_clients import BlockingAioClient, assert_same_result  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

from pricer_client import Client, PricerError, Target  # noqa: E402

PATHS, MAX_PATHS, COLUMNS, RELATIVE = 1000, 16000, 600, 0.02
ITEMS = ["mean", "var:0.99", "es:0.975"]
MARKET = dict(issuers=20, seed=5, rate=0.01, scenarios=COLUMNS)
JOB = dict(MARKET, paths=PATHS, statistics=ITEMS, target="var:0.99=2%", max_paths=MAX_PATHS)
CLI_JOB = ["--issuers", "20", "--seed", "5", "--rate", "0.01", "--scenarios", str(COLUMNS),
           "--paths", str(PATHS), "--stats", ",".join(ITEMS), "--error-target", "var:0.99=2%",
           "--max-paths", str(MAX_PATHS)]


def meets_target(statistics):
    """Whether each column's var_0.99 error, the half-width of its interval,
    is at most 2% of |var_0.99| (PrecisionTarget)."""
    error = (statistics["var_0.99_hi"] - statistics["var_0.99_lo"]) / 2
    return error <= RELATIVE * np.abs(statistics["var_0.99"])


class PrecisionTargetTest(CliTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.progress = []
        with Client(cls.server.target) as client:
            cls.result = client.price(**JOB, progress=lambda *seen: cls.progress.append(seen))

    def test_columns_end_at_p_times_2_to_the_k_where_the_target_says(self):
        r = self.result
        self.assertEqual((r.column_begin, r.column_end, r.paths), (0, COLUMNS, PATHS))
        # Every column's paths are P x 2^k <= max_paths: the client refuses
        # a chunk of other rows (Results._check_rows; python_targets_test
        # sends such chunks), so a result that got here has them.
        counts = dict(zip(*np.unique(r.column_paths, return_counts=True)))
        print(f"\ncolumns by paths: {counts}, target met by {r.target_met.sum()}",
              file=sys.stderr)
        self.assertGreaterEqual(len(counts), 3, "too few rounds to test anything")
        # target_met is the target computed from the result's own errors.
        np.testing.assert_array_equal(r.target_met, meets_target(r.statistics))
        self.assertTrue(np.all(r.column_paths[~r.target_met] == MAX_PATHS))
        self.assertTrue(r.target_met.any())
        # Progress: the columns so far, of all, after each chunk; a chunk
        # adds at least one column and the last brings the count to all.
        done = [done for done, _ in self.progress]
        self.assertEqual({total for _, total in self.progress}, {COLUMNS})
        self.assertTrue(np.all(np.diff([0] + done) > 0), done)
        self.assertEqual(done[-1], COLUMNS)

    def test_a_column_is_a_direct_request_with_its_paths(self):
        r = self.result
        picked = [int(np.flatnonzero(r.column_paths == paths)[0])
                  for paths in np.unique(r.column_paths)[[0, 1, -1]]]
        with Client(self.server.target) as client:
            for j in picked:
                with self.subTest(column=j, paths=int(r.column_paths[j])):
                    direct = client.price(**MARKET, paths=int(r.column_paths[j]),
                                          column_begin=j, column_end=j + 1, statistics=ITEMS,
                                          errors=True)
                    self.assertEqual(list(direct.statistics), list(r.statistics))
                    for name, values in direct.statistics.items():
                        self.assertEqual(values.tobytes(), r.statistics[name][j:j + 1].tobytes(),
                                         name)
                    if r.column_paths[j] > PATHS:  # the round before was short of it
                        half = client.price(**MARKET, paths=int(r.column_paths[j]) // 2,
                                            column_begin=j, column_end=j + 1,
                                            statistics=ITEMS, errors=True)
                        self.assertFalse(meets_target(half.statistics)[0])

    def test_both_clients_and_split_parts_return_the_same_bits(self):
        with BlockingAioClient(self.server.target) as client:
            assert_same_result(self, client.price(**JOB), self.result)
            assert_same_result(self, client.price(**JOB, split=3), self.result)
        with Client(self.server.target) as client:
            target = Target("var", 0.99, relative=RELATIVE)
            assert_same_result(self, client.price(**{**JOB, "target": target}, split=2),
                               self.result)

    def test_the_cli_csv_is_what_write_csv_writes(self):
        self.pricer(*CLI_JOB, "--stats-out", self.path("cli.csv"))
        self.result.write_csv(self.path("py.csv"))
        with open(self.path("cli.csv")) as cli, open(self.path("py.csv")) as py:
            cli_text, py_text = cli.read(), py.read()
        self.assertTrue(py_text.startswith(
            "column,v0,mean,mean_se,var_0.99,var_0.99_lo,var_0.99_hi,es_0.975,es_0.975_se,"
            "paths,target_met\n"), py_text[:200])
        self.assertEqual(py_text, cli_text)

    def test_the_server_refuses_what_only_it_checks(self):
        for make in (Client, BlockingAioClient):
            with self.subTest(client=make.__name__), make(self.server.target) as client:
                with self.assertRaises(PricerError) as error:
                    client.price(**{**JOB, "max_paths": 2_000_000})
                self.assertEqual(error.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
                self.assertEqual(error.exception.field, "target.max_paths")


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
