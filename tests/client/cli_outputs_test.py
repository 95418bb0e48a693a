"""End to end, a real pricerd and the real CLI: output files that cannot be
written are refused before any job is sent (exit 2, naming the file and the
bytes), and one that fails during or after the run is a local error (exit 2),
not a server status; after --resume the summary tells the columns this run
priced from those of the journal; on a terminal a progress line is redrawn
in place."""

import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import WHOLE_BUDGET, CliTestCase, run_cli, run_on_terminal  # noqa: E402

ARGS = None
JOB = ["--issuers", "3", "--paths", "1000", "--scenarios", "400", "--seed", "1"]
# As in resume_test.py: a 24 MiB budget runs this as dozens of shards, whose
# chunks of 128 columns keep arriving for a few seconds on two cores.
BUDGET = "24MiB"
COLUMNS = 24000
RESUME_JOB = ["--issuers", "4000", "--paths", "500", "--scenarios", str(COLUMNS), "--seed", "5",
              "--stats", "mean,var:0.99", "--chunk-columns", "128"]


def logged_jobs(server, since=0):
    """The column ranges of the jobs the server has accepted, after the first
    `since` characters of its log, and the log's length."""
    with open(server.log.name) as f:
        log = f.read()
    ranges = [(int(a), int(b)) for a, b in
              re.findall(r"paths, columns \[(\d+), (\d+)\)", log[since:])]
    return ranges, len(log)


class OutputsTest(CliTestCase):
    device_memory = BUDGET
    server_flags = WHOLE_BUDGET

    def pricer(self, *args):
        return run_cli(ARGS.pricer, "price", "--target", self.server.target, *args)

    def assert_refused_before_any_job(self, args, *messages):
        _, before = logged_jobs(self.server)
        proc = self.pricer(*JOB, *args)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        for message in messages:
            self.assertIn(message, proc.stderr)
        self.assertNotIn("ABORTED", proc.stderr)
        self.assertEqual(logged_jobs(self.server, before)[0], [], "a job was sent")
        return proc

    def test_unwritable_output_is_refused_before_the_job(self):
        with open(self.path("a_file"), "w") as f:
            f.write("x")
        for path, why in ((self.path("no/such/dir/stats.csv"), "No such file or directory"),
                          (self.path("a_file/stats.csv"), "Not a directory"),
                          ("/proc/pricer-test/stats.csv", "No such file or directory")):
            self.assert_refused_before_any_job(
                ["--stats-out", path], f"pricer: --stats-out {path}: cannot be written: {why}")
        path = self.path("no/dir/sc.npy")
        self.assert_refused_before_any_job(["--stats-out", self.path("ok.csv"), "--full-out", path],
                                           f"--full-out {path}: cannot be written")
        self.assertFalse(os.path.exists(self.path("ok.csv")))

    def test_full_out_larger_than_the_disk_is_refused_naming_the_bytes(self):
        small = self.path("tmpfs")
        os.mkdir(small)
        mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", small],
                               capture_output=True, text=True)
        if mount.returncode != 0:
            self.skipTest(f"cannot mount a 1 MiB tmpfs here: {mount.stderr.strip()}")
        try:
            full = os.path.join(small, "sc.npy")
            proc = self.assert_refused_before_any_job(["--full-out", full],
                                                      f"--full-out {full}: not enough disk space")
            needed, available = map(int, re.search(r"it needs (\d+) bytes, (\d+) are available",
                                                   proc.stderr).groups())
            self.assertEqual(needed, 1000 * 400 * 4 + 128)  # P x M float32 and the header
            self.assertLessEqual(available, 1 << 20)
            self.assertFalse(os.path.exists(full))
            # What fits is written.
            proc = self.pricer(*JOB, "--column-end", "50", "--full-out", full)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        finally:
            subprocess.run(["umount", small], check=True)

    def test_a_file_failing_during_or_after_the_run_is_a_local_error(self):
        # /dev/full opens for writing, and every write fails with ENOSPC: the
        # .npy header as the job starts, the CSV once it is done.
        for flag in ("--full-out", "--stats-out", "--prices-out"):
            proc = self.pricer(*JOB, flag, "/dev/full")
            self.assertEqual(proc.returncode, 2, f"{flag}: {proc.stderr}")
            self.assertIn("/dev/full", proc.stderr)
            self.assertNotRegex(proc.stderr, r"pricer: \d+ [A-Z_]+:", f"{flag}: a status code")

    def killed_midway(self, prefix):
        """The arguments of a run killed once its journal holds a few dozen
        chunks (about 2 KiB of statistics each), and the server log's length
        then."""
        prefix = self.path(prefix)
        args = [*RESUME_JOB, "--full-out", prefix + ".npy", "--stats-out", prefix + ".csv"]
        journal = prefix + ".npy.progress"
        proc = subprocess.Popen([ARGS.pricer, "price", "--target", self.server.target, *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + scaled(120)
        while proc.poll() is None and time.time() < deadline:
            if os.path.exists(journal) and os.path.getsize(journal) > 64 * 1024:
                break
            time.sleep(0.02)
        self.assertIsNone(proc.poll(), "the run ended before the kill: size the job up")
        proc.kill()
        proc.wait(timeout=scaled(60))
        return args, logged_jobs(self.server)[1]

    def test_resumed_summary_counts_this_runs_columns(self):
        args, before = self.killed_midway("resumed_text")
        resumed = self.pricer(*args, "--resume")
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        m = re.search(r"priced (\d+) columns \((\d+) more from the journal\) x 500 paths x "
                      r"4000 issuers in (\d+\.\d+) s \(server [\d.]+ s\): ([\d.]+) GFLOP/s",
                      resumed.stdout)
        self.assertIsNotNone(m, resumed.stdout)
        priced, restored = int(m.group(1)), int(m.group(2))
        self.assertGreater(restored, 0)
        self.assertEqual(priced + restored, COLUMNS)
        # This run priced exactly the columns it asked the server for, and
        # its rate is of those.
        ranges, _ = logged_jobs(self.server, before)
        self.assertEqual(sum(b - a for a, b in ranges), priced)
        wall, gflops = float(m.group(3)), float(m.group(4))
        self.assertAlmostEqual(gflops, 2 * 500 * 4000 * priced / wall / 1e9,
                               delta=0.05 + gflops * 0.0005 / wall)

    def test_resumed_json_summary_counts_this_runs_columns(self):
        args, before = self.killed_midway("resumed_json")
        resumed = self.pricer(*args, "--resume", "--json")
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        summary = json.loads(resumed.stdout)
        priced, restored = summary["columns_priced"], summary["columns_from_journal"]
        self.assertGreater(restored, 0)
        self.assertGreater(priced, 0)
        self.assertEqual(priced + restored, COLUMNS)
        self.assertEqual((summary["column_begin"], summary["column_end"]), (0, COLUMNS))
        ranges, _ = logged_jobs(self.server, before)
        self.assertEqual(sum(b - a for a, b in ranges), priced)
        self.assertEqual(summary["flops"], 2 * 500 * 4000 * priced)
        self.assertAlmostEqual(summary["gflops_per_second"],
                               summary["flops"] / summary["wall_seconds"] / 1e9, places=6)
        self.assertFalse(os.path.exists(self.path("resumed_json.npy.progress")))

    def test_summary_of_a_whole_run(self):
        proc = self.pricer(*JOB)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"priced 400 columns x 1000 paths x 3 issuers in "
                                      r"\d+\.\d{3} s \(server \d+\.\d{3} s\): \d+\.\d GFLOP/s\n")
        self.assertNotIn("journal", proc.stdout)
        self.assertNotIn("columns/s", proc.stderr)  # not a terminal: no progress line

    def test_progress_line_on_a_terminal(self):
        """stderr on a pseudo-terminal: the line is redrawn in place with the
        percentage, the rate and the ETA, at most about 10 times a second."""
        code, text, wall = run_on_terminal([ARGS.pricer, "price", "--target", self.server.target,
                                            *RESUME_JOB[:-2], "--chunk-columns", "32"])
        self.assertEqual(code, 0, text)
        lines = [line for line in text.split("\r") if line]
        pattern = re.compile(r"^ *(\d+\.\d)%  (\d+) / 24000 columns  \d+ columns/s  "
                             r"ETA (\d+s|\d+m\d\ds|\d+h\d\dm|--)\x1b\[K(\n)?$")
        percents = []
        for line in lines:
            m = pattern.match(line)
            self.assertIsNotNone(m, repr(line))
            percents.append(float(m.group(1)))
        self.assertEqual(percents[-1], 100.0)
        self.assertEqual(percents, sorted(percents))
        self.assertTrue(lines[-1].endswith("\n"))
        self.assertGreaterEqual(len(lines), 2, "one draw only: size the job up")
        # 24000 / 32 = 750 chunks, drawn at most every 100 ms, and the last.
        self.assertLessEqual(len(lines), wall * 10 + 2)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    CliTestCase.binaries = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
