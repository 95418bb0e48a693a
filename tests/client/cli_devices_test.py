"""End to end: `pricer devices` (the table and --json) against real pricerd
servers on loopback ports: one cpu device of 1 GiB, and two of 64 MiB whose
budget refuses a job too large for them."""

import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pricerd_fixture import Server, run_cli  # noqa: E402

ARGS = None


def physical_bytes():
    """The host's physical memory, as pricerd reads it (pages times page size)."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


class OneDeviceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.pricerd)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_devices_lists_cpu0(self):
        proc = subprocess.run([ARGS.pricer, "devices", "--target", self.server.target],
                              capture_output=True, text=True, timeout=scaled(60))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"cpu0\s+cpu\s+1073741824\s+\d+\s+\d+\s+\d+")


class SmallDevicesTest(unittest.TestCase):
    """A second server: two logical cpu devices of 64 MiB each."""

    BUDGET = 64 * 1024 * 1024

    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.pricerd, devices="cpu:2", device_memory="64MiB")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def devices(self):
        """`pricer devices`: the rows as {name: [kind, budget, in use, peak, shards, busy]}
        and the footer line, after the server's version."""
        proc = run_cli(ARGS.pricer, "devices", "--target", self.server.target, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertRegex(lines[0], r"^server version: \d+\.\d+\.\d+ \((cuda|cpu only)\)$")
        self.assertEqual(lines[1].split(), ["device", "kind", "budget", "bytes", "in", "use",
                                            "bytes", "peak", "bytes", "shards", "done", "busy",
                                            "s"])
        rows = {}
        for line in lines[2:-1]:
            if line.startswith("  "):  # a device's details (kernels, headroom, lost)
                continue
            name, kind, *numbers = line.split()
            rows[name] = [kind] + [int(x) for x in numbers[:4]] + [float(numbers[4])]
        return rows, lines[-1]

    def devices_json(self):
        proc = run_cli(ARGS.pricer, "devices", "--json", "--target", self.server.target, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def price_small_job(self):
        proc = run_cli(ARGS.pricer, "price", "--target", self.server.target,
                       "--issuers", "20", "--paths", "1000", "--scenarios", "3000", "--seed", "5")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"priced 3000 columns x 1000 paths x 20 issuers")

    def test_devices_table_after_a_job(self):
        before, _ = self.devices()
        self.price_small_job()
        after, footer = self.devices()
        self.assertEqual(sorted(after), ["cpu0", "cpu1"])
        for name, (kind, budget, in_use, peak, shards, busy) in after.items():
            self.assertEqual(kind, "cpu", name)
            self.assertEqual(budget, self.BUDGET, name)
            self.assertEqual(in_use, 0, name)
            self.assertLessEqual(peak, self.BUDGET, name)
            self.assertGreaterEqual(busy, 0.0, name)
        done = {name: after[name][4] - before[name][4] for name in after}
        self.assertGreater(max(done.values()), 0, after)
        # A device that ran shards held the job's terminal prices: 1000 x 20 float32.
        for name in after:
            if done[name] > 0:
                self.assertGreaterEqual(after[name][3], 1000 * 20 * 4, after)
        self.assertTrue(footer.startswith("jobs queued or running: 0 of 64; "), footer)
        # The pinned memory's default bound, an eighth of the host's memory;
        # cpu devices stage nothing through it.
        pinned = re.search(r"; pinned host bytes: (\d+) of (\d+) \(peak (\d+)\)$", footer)
        self.assertTrue(pinned, footer)
        self.assertEqual(int(pinned.group(2)), physical_bytes() // 8)
        self.assertEqual((int(pinned.group(1)), int(pinned.group(3))), (0, 0))

    def test_devices_json_mapping(self):
        self.price_small_job()
        reply = self.devices_json()
        self.assertEqual([d["name"] for d in reply["devices"]], ["cpu0", "cpu1"])
        for d in reply["devices"]:
            self.assertEqual(d["kind"], "cpu")
            self.assertRegex(d["kernels"], r"^OpenBLAS \d+\.\d+\.\d+, \w+ kernels")
            # Protobuf's JSON mapping writes int64 as a string.
            self.assertIsInstance(d["memoryBudgetBytes"], str)
            self.assertEqual(int(d["memoryBudgetBytes"]), self.BUDGET)
            self.assertEqual(int(d["bytesInUse"]), 0)
            self.assertGreaterEqual(int(d["shardsDone"]), 0)
            self.assertIsInstance(d["busySeconds"], (int, float))
            self.assertGreaterEqual(d["busySeconds"], 0)
        self.assertGreater(sum(int(d["shardsDone"]) for d in reply["devices"]), 0)
        self.assertEqual(reply["maxQueuedJobs"], "64")
        self.assertEqual(int(reply["queuedJobs"]), 0)
        self.assertEqual(int(reply["maxPendingBytes"]), 1 << 30)
        self.assertEqual(int(reply["pinnedMemoryBytes"]), physical_bytes() // 8)
        self.assertEqual(int(reply["pinnedPeakBytes"]), 0)
        for d in reply["devices"]:
            self.assertEqual(int(d["headroomBytes"]), 0)

    def test_job_larger_than_the_device_budget_is_refused(self):
        proc = run_cli(ARGS.pricer, "price", "--target", self.server.target,
                       "--issuers", "500", "--paths", "100000", "--scenarios", "10")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("RESOURCE_EXHAUSTED", proc.stderr)
        self.assertIn("the largest device budget is %d bytes" % self.BUDGET, proc.stderr)
        needed = int(re.search(r"the job needs (\d+) bytes", proc.stderr).group(1))
        self.assertGreaterEqual(needed, 100000 * 500 * 4)  # ST alone
        # The server still serves.
        self.price_small_job()

if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
