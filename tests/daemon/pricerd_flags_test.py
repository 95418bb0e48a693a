"""pricerd refuses flags it cannot use, naming them and the value (the
daemon's command line: its errors name the flag and exit non-zero)."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

ARGS = None


class PricerdFlagsTest(unittest.TestCase):
    def refused(self, *flags):
        proc = subprocess.run([ARGS.pricerd, "--listen", "127.0.0.1:0", "--metrics-listen", "", *flags],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=30)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        return proc.stdout

    def test_unknown_devices_refused(self):
        out = self.refused("--devices", "gpu")
        self.assertIn("'gpu'", out)
        self.assertIn("auto, cpu, cpu:K", out)

    def test_too_many_devices_refused(self):
        out = self.refused("--devices", "cpu:65")
        self.assertIn("'cpu:65'", out)

    def test_bad_device_memory_refused(self):
        out = self.refused("--device-memory", "lots")
        self.assertIn("--device-memory", out)
        self.assertIn("'lots'", out)

    def test_bad_byte_count_refused(self):
        out = self.refused("--max-request-bytes", "12XB")
        self.assertIn("--max-request-bytes", out)
        self.assertIn("'12XB'", out)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
