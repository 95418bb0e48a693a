"""Resumable results with real pricerd servers on loopback: one of two servers
killed with SIGKILL mid-job (the CLI finishes on the other), and the CLI
itself killed mid-run and continued with --resume. Either way the .npy and CSV
files (statistics with their errors, which the journal keeps) are
byte-identical to an uninterrupted run's."""

import filecmp
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import WHOLE_BUDGET, Server  # noqa: E402  (the same fixture)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)

from pricer_client._proto import pricer_pb2  # noqa: E402
from pricer_client import Client  # noqa: E402

ARGS = None

# A job of several seconds on two cores that arrives in many pieces: a 24 MiB
# budget per server holds shards of at most 768 of these columns (ST is 8 MB),
# so a 24,000-column job runs as dozens of shards and chunks of 128 columns
# keep arriving while it runs.
BUDGET = "24MiB"
COLUMNS = 24000
JOB = ["--issuers", "4000", "--paths", "500", "--scenarios", str(COLUMNS), "--seed", "5",
       "--stats", "mean,var:0.99,es:0.99", "--errors", "--chunk-columns", "128"]
OUTPUTS = ("full.npy", "stats.csv", "prices.npy")
RETRY = re.compile(r"pricer: columns \[\d+, \d+\) \(\d+ missing\) broke with \d+ \w+: .*; "
                   r"retry 1 of 3 in 0\.2 s")


def read_varint(data, at):
    """The varint at data[at] and the offset after it; None if cut short."""
    value, shift = 0, 0
    while at < len(data):
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
    return None, at


def journal_columns(path):
    """The columns a progress journal records (0 while there is none). The
    format is client/lib/progress_journal.h's: two header lines, then
    varint-length-prefixed PriceReply records; a torn last one is ignored."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return 0
    lines = data.split(b"\n", 2)
    if len(lines) < 3:
        return 0
    data, at, columns = lines[2], 0, 0
    while True:
        size, at = read_varint(data, at)
        if size is None or at + size > len(data):
            return columns
        reply = pricer_pb2.PriceReply.FromString(data[at:at + size])
        at += size
        if reply.HasField("chunk"):
            columns += reply.chunk.column_end - reply.chunk.column_begin


def shards_done(server):
    with Client(server.target) as client:
        return sum(d.shards_done for d in client.devices().devices)


def queued_jobs(server):
    with Client(server.target) as client:
        return client.devices().queued_jobs


class ResumeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.pricerd, device_memory=BUDGET, flags=WHOLE_BUDGET)
        cls.dir = tempfile.TemporaryDirectory()
        # The uninterrupted run every interrupted one must equal, byte for byte.
        before = shards_done(cls.server)
        proc = cls.run_pricer(cls.server.target, "ref")
        assert proc.returncode == 0, proc.stderr
        cls.job_shards = shards_done(cls.server) - before

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.dir.cleanup()

    @classmethod
    def outputs(cls, prefix):
        return [os.path.join(cls.dir.name, f"{prefix}_{name}") for name in OUTPUTS]

    @classmethod
    def args(cls, target, prefix, *extra, job=JOB):
        full, stats, prices = cls.outputs(prefix)
        return [ARGS.pricer, "price", "--target", target, *job, "--full-out", full,
                "--stats-out", stats, "--prices-out", prices, *extra]

    @classmethod
    def run_pricer(cls, target, prefix, *extra, job=JOB):
        return subprocess.run(cls.args(target, prefix, *extra, job=job), capture_output=True,
                              text=True, timeout=scaled(300))

    def journal(self, prefix):
        return self.outputs(prefix)[0] + ".progress"

    def start_and_wait_for(self, target, prefix, columns, *extra):
        """Starts the CLI and returns it once its journal records at least
        `columns` columns, with the count; fails if it finished first."""
        proc = subprocess.Popen(self.args(target, prefix, *extra), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.time() + scaled(120)
        while time.time() < deadline and proc.poll() is None:
            recorded = journal_columns(self.journal(prefix))
            if recorded >= columns:
                return proc, recorded
            time.sleep(0.02)
        _, err = proc.communicate(timeout=scaled(300))
        self.fail(f"the CLI ended ({proc.returncode}) before {columns} columns were journaled: "
                  f"size the job up\n{err}")

    def assert_same_as_reference(self, prefix):
        for ref, got in zip(self.outputs("ref"), self.outputs(prefix)):
            self.assertTrue(filecmp.cmp(ref, got, shallow=False), f"{got} differs from {ref}")
        self.assertFalse(os.path.exists(self.journal(prefix)), "the journal was not removed")

    def test_server_killed_mid_job_the_other_finishes(self):
        servers = [Server(ARGS.pricerd, device_memory=BUDGET, flags=WHOLE_BUDGET)
                   for _ in range(2)]
        try:
            target = "ipv4:" + ",".join(s.target for s in servers)
            proc, _ = self.start_and_wait_for(target, "killed", 1000, "--split", "4")
            # Kill a server that has a part in progress (round robin usually
            # gives each two; the second if both do).
            busy = [s for s in servers if queued_jobs(s) > 0]
            self.assertTrue(busy, "no server has a job left: size the job up")
            victim = busy[-1]
            at_kill = journal_columns(self.journal("killed"))
            victim.proc.kill()
            victim.proc.wait()
            self.assertIsNone(proc.poll(), "the CLI ended before the kill")
            self.assertLess(at_kill, COLUMNS)
            out, err = proc.communicate(timeout=scaled(300))
            self.assertEqual(proc.returncode, 0, err)
            # A part was cut off and asked again, on the server still up.
            self.assertRegex(err, RETRY)
            self.assertIn(f"priced {COLUMNS} columns x 500 paths x 4000 issuers", out)
            self.assert_same_as_reference("killed")
        finally:
            for server in servers:
                server.stop()

    def test_cli_killed_then_resumed_prices_only_the_rest(self):
        proc, _ = self.start_and_wait_for(self.server.target, "resumed", 4000)
        proc.kill()
        proc.communicate(timeout=scaled(60))
        journal = self.journal("resumed")
        at_kill = journal_columns(journal)
        self.assertGreaterEqual(at_kill, 4000)
        self.assertLess(at_kill, COLUMNS, "the CLI finished before the kill: size the job up")
        # A record cut short by the kill is ignored: a length of 200, 3 bytes.
        with open(journal, "ab") as f:
            f.write(b"\xc8\x01abc")

        # Without --resume the journal is not overwritten.
        again = self.run_pricer(self.server.target, "resumed")
        self.assertEqual(again.returncode, 2, again.stderr)
        self.assertIn(journal, again.stderr)
        self.assertIn("--resume", again.stderr)
        # Another request into the same files is refused, naming the journal.
        other = [("6" if a == "5" else a) for a in JOB]  # another seed
        refused = self.run_pricer(self.server.target, "resumed", "--resume", job=other)
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertIn(journal, refused.stderr)
        self.assertIn("another request", refused.stderr)

        # The server stops the killed run's job at its next shard boundary.
        deadline = time.time() + scaled(60)
        while queued_jobs(self.server) > 0 and time.time() < deadline:
            time.sleep(0.05)
        before = shards_done(self.server)
        resumed = self.run_pricer(self.server.target, "resumed", "--resume")
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        # The columns of the journal are counted apart from this run's.
        self.assertIn(f"priced {COLUMNS - at_kill} columns ({at_kill} more from the journal) x ",
                      resumed.stdout)
        self.assert_same_as_reference("resumed")
        # Only the rest was priced: fewer shards than the whole job.
        self.assertLess(shards_done(self.server) - before, self.job_shards)

    def test_resume_without_a_journal_is_refused(self):
        proc = self.run_pricer(self.server.target, "none", "--resume")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("no journal " + self.journal("none"), proc.stderr)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
