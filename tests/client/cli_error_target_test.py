"""End to end, a real pricerd and the real CLI: `pricer price --error-target
var:0.99=2% --max-paths N` writes the CSV's paths and target_met columns;
every column's paths are --paths x 2^k, at most N; a column that met the
target meets it by the CSV's own error columns, one that did not took N
paths; a column is, to the text, a direct request with its paths over that
column alone; the summary (text and --json) counts the columns by paths;
--split and --resume write the same CSV; the progress line names the round;
and the flags are checked before any call (exit 2)."""

import json
import os
import re
import sys
import unittest
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import (CliTestCase, read_csv_rows, run_cli,  # noqa: E402
                             run_on_terminal)

ARGS = None
PATHS, MAX_PATHS, COLUMNS, RELATIVE = 1000, 16000, 600, 0.02
STATS = ["--stats", "mean,var:0.99,es:0.975"]
MARKET = ["--issuers", "20", "--seed", "5", "--rate", "0.01", "--scenarios", str(COLUMNS)]
JOB = [*MARKET, "--paths", str(PATHS), *STATS, "--error-target", "var:0.99=2%",
       "--max-paths", str(MAX_PATHS)]
HEADER = ("column,v0,mean,mean_se,var_0.99,var_0.99_lo,var_0.99_hi,es_0.975,es_0.975_se,"
          "paths,target_met")


def meets_target(row):
    """var_0.99's error, the half-width of its interval, within 2% of it."""
    error = (float(row["var_0.99_hi"]) - float(row["var_0.99_lo"])) / 2
    return error <= RELATIVE * abs(float(row["var_0.99"]))


def thousands(n):
    return f"{n:,}"


class ErrorTargetTest(CliTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.csv = os.path.join(cls.dir.name, "targeted.csv")
        cls.targeted = run_cli(ARGS.pricer, "price", "--target", cls.server.target, *JOB,
                          "--stats-out", cls.csv)
        cls.header, cls.rows = read_csv_rows(cls.csv)
        with open(cls.csv) as f:
            cls.text = f.read()

    def test_each_column_has_its_paths_and_whether_it_met_the_target(self):
        self.assertEqual(self.targeted.returncode, 0, self.targeted.stderr)
        self.assertEqual(self.header, HEADER)
        self.assertEqual([int(row["column"]) for row in self.rows], list(range(COLUMNS)))
        paths = Counter(int(row["paths"]) for row in self.rows)
        self.assertTrue(set(paths) <= {PATHS << k for k in range(5)}, paths)
        self.assertGreaterEqual(len(paths), 2, "a single round: nothing to test")
        for row in self.rows:
            self.assertIn(row["target_met"], ("0", "1"))
            if row["target_met"] == "1":
                self.assertTrue(meets_target(row), row)
            else:
                self.assertEqual(int(row["paths"]), MAX_PATHS, row)
                self.assertFalse(meets_target(row), row)
        self.assertIn("1", {row["target_met"] for row in self.rows})

    def test_a_column_is_a_direct_request_with_its_paths(self):
        by_paths = {}
        for row in self.rows:
            by_paths.setdefault(int(row["paths"]), row)
        for paths in (min(by_paths), max(by_paths)):
            row = by_paths[paths]
            column = int(row["column"])
            with self.subTest(column=column, paths=paths):
                out = self.path(f"direct_{column}.csv")
                self.pricer(*MARKET, "--paths", str(paths), *STATS, "--errors", "--column-begin",
                            str(column), "--column-end", str(column + 1), "--stats-out", out)
                header, direct = read_csv_rows(out)
                self.assertEqual(header + ",paths,target_met", HEADER)
                self.assertEqual(len(direct), 1)
                self.assertEqual(direct[0], {k: v for k, v in row.items()
                                             if k not in ("paths", "target_met")})

    def test_the_summary_counts_the_columns_by_paths(self):
        met = sum(row["target_met"] == "1" for row in self.rows)
        paths = sorted(Counter(int(row["paths"]) for row in self.rows).items())
        line = (f"target var_0.99 <= 2%: {thousands(met)} of {thousands(COLUMNS)} columns met it;"
                f" paths " + ", ".join(f"{thousands(p)} x {thousands(n)}" for p, n in paths))
        self.assertIn(line + "\n", self.targeted.stdout)
        self.assertIn(f"statistics over {PATHS} to {paths[-1][0]} paths per column",
                      self.targeted.stdout)
        self.assertRegex(self.targeted.stdout,
                         f"priced {COLUMNS} columns x {paths[0][0]} to {paths[-1][0]} paths x 20 ")
        summary = json.loads(self.pricer(*JOB, "--json").stdout)
        self.assertEqual(summary["target"], "var_0.99 <= 2%")
        self.assertEqual(summary["columns_met_target"], met)
        self.assertEqual(summary["columns_by_paths"], ",".join(f"{p}:{n}" for p, n in paths))
        self.assertEqual(summary["paths"], PATHS)
        # Every round of a column counts: P + 2P + ... + its paths.
        self.assertEqual(summary["flops"], 2 * 20 * sum(n * (2 * p - PATHS) for p, n in paths))

    def test_split_parts_write_the_same_csv(self):
        out = self.path("split.csv")
        self.pricer(*JOB, "--split", "3", "--stats-out", out)
        with open(out) as f:
            self.assertEqual(f.read(), self.text)

    def test_a_resumed_run_writes_the_same_csv(self):
        out = self.path("resumed.csv")
        journal = out + ".progress"
        # Killed once a chunk is in the journal (a header and the accepted
        # take about 100 bytes; a chunk of statistics more).
        self.kill_once_journaled([*JOB, "--stats-out", out], journal, 400)
        resumed = self.pricer(*JOB, "--stats-out", out, "--resume")
        self.assertRegex(resumed.stdout, r"priced \d+ columns \(\d+ more from the journal\)")
        self.assertIn(f"of {COLUMNS} columns met it", resumed.stdout)
        with open(out) as f:
            self.assertEqual(f.read(), self.text)
        self.assertFalse(os.path.exists(journal))

    def test_the_progress_line_names_the_round(self):
        code, text, _ = run_on_terminal([ARGS.pricer, "price", "--target", self.server.target,
                                         *JOB])
        self.assertEqual(code, 0, text)
        rounds = [(int(r), int(p)) for r, p in re.findall(r"round (\d+): (\d+) paths", text)]
        self.assertEqual(rounds[0], (0, PATHS))  # drawn at once
        self.assertEqual(rounds, sorted(rounds))
        for r, p in rounds:
            self.assertEqual(p, PATHS << r)
        self.assertRegex(text, r"100\.0%  600 / 600 columns .* round \d+: \d+ paths\x1b\[K\n$")

    def test_flags_the_target_cannot_use_exit_2(self):
        plain = [*MARKET, "--paths", str(PATHS), *STATS]
        refused = {
            "needs --max-paths": [*plain, "--error-target", "var:0.99=2%"],
            "--max-paths needs --error-target": [*plain, "--max-paths", "4000"],
            "--error-target var_0.975: the statistic is not among --stats "
            "(mean,var_0.99,es_0.975)": [*plain, "--error-target", "var:.975=2%",
                                         "--max-paths", "4000"],
            "is below --paths": [*plain, "--error-target", "mean=1", "--max-paths", "500"],
            "cannot write --full-out": [*JOB, "--full-out", self.path("sc.npy")],
            "cannot write --prices-out": [*JOB, "--prices-out", self.path("st.npy")],
            "give STAT[:LEVEL]=X": [*plain, "--error-target", "var:0.99", "--max-paths", "4000"],
            "min has no Monte Carlo error": [*plain, "--error-target", "min=1",
                                             "--max-paths", "4000"],
            "the bound must be a positive number": [*plain, "--error-target", "mean=-1%",
                                                    "--max-paths", "4000"],
        }
        for message, args in refused.items():
            with self.subTest(message=message):
                proc = self.pricer(*args, check=False)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn(message, proc.stderr)
        proc = self.pricer(*JOB[:-1], "many", check=False)  # CLI11's own parse error
        self.assertEqual(proc.returncode, 2, proc.stderr)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
