"""End to end, books and historical scenarios through the service's run
machinery: a book priced to a target precision (its columns' errors meet it
or reach the path cap); a run of a book on historical returns killed and
continued with --resume writes the files an uninterrupted run writes; and a
server drained (SIGTERM) while it prices a book (with its contributions and
sensitivities) finishes the call."""

import filecmp
import os
import signal
import subprocess
import sys
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import CliTestCase, Server, read_csv_rows  # noqa: E402

ARGS = None
ISSUERS = 40


def book_lines(kinds=("call", "put")):
    """Options on every issuer of a generated market (spots U(5, 10)),
    struck at 7.5, expiring a year after the one-year horizon."""
    return ["issuer,type,strike,expiry"] + [
        f"{i},{kind},7.5,2" for i in range(ISSUERS) for kind in kinds]


class CliBookRunsTest(CliTestCase):
    def test_a_book_prices_to_a_target_precision(self):
        book = self.write("target_book.csv", book_lines())
        out = self.path("target.csv")
        proc = self.pricer("--issuers", str(ISSUERS), "--seed", "3", "--scenarios", "200",
                           "--instruments-file", book, "--paths", "1000",
                           "--stats", "mean,var:0.99", "--error-target", "var:0.99=3%",
                           "--max-paths", "16000", "--stats-out", out)
        self.assertIn(f"x {ISSUERS} issuers ({2 * ISSUERS} instruments)", proc.stdout)
        _, rows = read_csv_rows(out)
        self.assertEqual(len(rows), 200)
        for row in rows:
            half_width = (float(row["var_0.99_hi"]) - float(row["var_0.99_lo"])) / 2
            met = half_width <= 0.03 * abs(float(row["var_0.99"]))
            self.assertEqual(row["target_met"], "1" if met else "0", row)
            if not met:
                self.assertEqual(row["paths"], "16000", row)
        self.assertGreater(sum(row["target_met"] == "1" for row in rows), 0)

    def historical_job(self, prefix, scenarios, columns, full, contributions=False):
        """A book on `scenarios` historical returns over `columns` columns;
        its statistics with their errors, SC when `full`, V, and with
        `contributions` ES's and their delta and vega (with errors)."""
        returns = self.path(f"runs_returns_{scenarios}.npy")
        if not os.path.exists(returns):
            rng = np.random.default_rng(8)
            np.save(returns, rng.normal(0, 0.25, size=(scenarios, ISSUERS)).astype(np.float32))
        book = self.write("runs_book.csv", book_lines(("call", "put", "forward")))
        outputs = [self.path(f"{prefix}_stats.csv")]
        args = ["--issuers", str(ISSUERS), "--seed", "4", "--scenarios", str(columns),
                "--instruments-file", book, "--returns-file", returns, "--chunk-columns", "128",
                "--stats", "mean,var:0.99,es:0.975", "--errors", "--stats-out", outputs[0]]
        if full:
            outputs.append(self.path(f"{prefix}_full.npy"))
            args += ["--full-out", outputs[-1]]
        outputs.append(self.path(f"{prefix}_values.npy"))
        args += ["--values-out", outputs[-1]]
        if contributions:
            args += ["--contributions", "es:0.975", "--sensitivities", "delta,vega",
                     "--contributions-out", self.path(prefix)]
            outputs += [self.path(f"{prefix}.es_0.975{part}{se}.npy")
                        for part in ("", ".delta", ".vega") for se in ("", ".se")]
        return outputs, args

    def assert_same_files(self, got, want):
        for g, w in zip(got, want):
            self.assertTrue(filecmp.cmp(g, w, shallow=False), f"{g} differs from {w}")

    def test_a_killed_run_of_a_book_on_historical_returns_resumes(self):
        # Seconds on two cores: 2 x 20,000 x 120 x 8000 flops and the
        # statistics (with their errors) of 20,000 values a column; the kill
        # comes after the first few chunks (128-1024 columns in 3 runs).
        want, args = self.historical_job("whole", 20000, 8000, False)
        self.pricer(*args)
        got, args = self.historical_job("resumed", 20000, 8000, False)
        self.kill_once_journaled(args, got[0] + ".progress", 2000)
        resumed = self.pricer(*args, "--resume")
        self.assertRegex(resumed.stdout, r"priced \d+ columns \(\d+ more from the journal\)")
        self.assert_same_files(got, want)

    def test_the_readme_example_shows_what_the_linear_model_misses(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                              "scripts", "book-example.py")
        proc = subprocess.run([sys.executable, script, "--target", self.server.target,
                               "--pricer", ARGS.pricer], capture_output=True, text=True,
                              timeout=scaled(300))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ratios = {}
        for line in proc.stdout.splitlines()[2:]:
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            ratios[(cells[0], cells[1].split()[0])] = float(cells[4])
        # A short straddle is nearly delta-neutral: the linear model misses
        # most of its tail; long calls' losses are capped by their premium.
        self.assertLess(ratios[("short straddles", "VaR")], 0.7)
        self.assertLess(ratios[("short straddles", "ES")], 0.7)
        self.assertGreater(ratios[("long calls", "VaR")], 1.0)

    @staticmethod
    def started(server):
        """Whether `server` logged the start of the book's job."""
        with open(server.log.name) as log:
            return "instruments (historical returns)" in log.read()

    def test_a_drained_server_finishes_its_call_on_a_book(self):
        want, args = self.historical_job("undrained", 5000, 3000, True, True)
        self.pricer(*args)
        server = Server(ARGS.pricerd, flags=("--drain-seconds", "60"))
        try:
            got, args = self.historical_job("drained", 5000, 3000, True, True)
            proc = subprocess.Popen([ARGS.pricer, "price", "--target", server.target, *args],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.time() + scaled(60)
            while time.time() < deadline and not self.started(server):
                time.sleep(0.01)
            server.proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=scaled(300))
            self.assertEqual(proc.returncode, 0, err)
            self.assertEqual(server.proc.wait(timeout=scaled(120)), 0)
            # The drain began while the book's call ran (its 60 MB of SC take
            # far longer than the signal after the job's first log line).
            with open(server.log.name) as log:
                text = log.read()
            self.assertIn("draining", text)
            self.assertIn("new calls refused, 1 calls running", text)
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
        self.assert_same_files(got, want)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
