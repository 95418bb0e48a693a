"""End to end: budgets that only fit narrow shards. Two servers of two cpu
devices each, whose budgets hold ST and a 256-column shard but not the
planner's preferred width, price the requests the 1,024-column grid once
refused; their files are bit for bit those of a server with a large budget,
and no device's peak passes its budget."""

import filecmp
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import WHOLE_BUDGET, Server, run_cli  # noqa: E402

ARGS = None
MIB = 1 << 20


class TightBudgetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.reference = Server(ARGS.pricerd, devices="cpu:2", device_memory="1GiB",
                               flags=WHOLE_BUDGET)

    @classmethod
    def tearDownClass(cls):
        cls.reference.stop()
        cls.dir.cleanup()

    def price(self, server, *args):
        proc = run_cli(ARGS.pricer, "price", "--target", server.target, "--preset", "seed",
                       *args)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def peaks(self, server):
        proc = run_cli(ARGS.pricer, "devices", "--json", "--target", server.target, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return {d["name"]: (int(d["peakBytes"]), int(d["memoryBudgetBytes"]))
                for d in json.loads(proc.stdout)["devices"]}

    def check(self, budget, flags, args, out_flag, name):
        """Prices `args` on a cpu:2 server of `budget` bytes per device (and
        `flags`) and on the reference; the `out_flag` files must be equal."""
        tight = Server(ARGS.pricerd, devices="cpu:2", device_memory="%dMiB" % (budget // MIB),
                       flags=flags)
        try:
            tight_file = os.path.join(self.dir.name, "tight-" + name)
            self.price(tight, *args, out_flag, tight_file)
            peaks = self.peaks(tight)
        finally:
            tight.stop()
        reference_file = os.path.join(self.dir.name, "reference-" + name)
        self.price(self.reference, *args, out_flag, reference_file)
        self.assertTrue(filecmp.cmp(tight_file, reference_file, shallow=False),
                        "%s differs from the large budget's" % name)
        self.assertEqual(sorted(peaks), ["cpu0", "cpu1"])
        for device, (peak, device_budget) in peaks.items():
            self.assertEqual(device_budget, budget, device)
            self.assertGreater(peak, 0, "%s ran no shard" % device)
            self.assertLessEqual(peak, budget, device)
        return tight_file

    def test_full_output_on_48_mib_devices(self):
        # ST 20 MB (10,000 x 500 floats) and a 256-column shard 10.75 MB fit
        # 48 MiB; a 1,024-column shard (43 MB) does not.
        path = self.check(48 * MIB, WHOLE_BUDGET,
                          ["--scenarios", "5000", "--paths", "10000"], "--full-out", "sc.npy")
        self.assertEqual(os.path.getsize(path), 128 + 10000 * 5000 * 4)

    def test_statistics_under_the_default_job_cap(self):
        # --max-job-bytes' default quarter of 64 MiB gives a job 16 MiB: ST
        # 2 MB (1,000 x 500 floats) and a 256-column shard 1.5 MB.
        path = self.check(64 * MIB, (),
                          ["--paths", "1000", "--scenarios", "5000", "--stats", "mean"],
                          "--stats-out", "stats.csv")
        with open(path) as f:
            self.assertEqual(sum(1 for _ in f), 1 + 5000)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
