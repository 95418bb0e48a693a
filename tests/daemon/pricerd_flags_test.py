"""pricerd refuses flags it cannot use, naming them and the value, and keeps
to its documented exit codes: 0 (also --help, --version), 1 when valid flags
cannot start the server, 2 a flag or its value (never CLI11's own 105, 109)."""

import os
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)

ARGS = None


class PricerdFlagsTest(unittest.TestCase):
    def run_pricerd(self, *flags, listen="127.0.0.1:0"):
        return subprocess.run([ARGS.pricerd, "--listen", listen, "--metrics-listen", "", *flags],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=scaled(30))

    def refused(self, *flags, code=2, listen="127.0.0.1:0"):
        proc = self.run_pricerd(*flags, listen=listen)
        self.assertEqual(proc.returncode, code, proc.stdout)
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

    def test_bad_pinned_memory_refused(self):
        for value, reason in (("lots", "neither a byte count"), ("0", "must be in (0, 1]"),
                              ("150%", "must be in (0, 1]"), ("1.5", "neither a byte count"),
                              ("-2GiB", "neither a byte count")):
            out = self.refused("--pinned-memory", value)
            self.assertIn("--pinned-memory: '%s'" % value, out)
            self.assertIn(reason, out)

    def test_pinned_memory_is_logged_as_bytes(self):
        for value, logged in (("64MiB", 64 << 20), ("1073741824", 1 << 30)):
            proc = subprocess.Popen(
                [ARGS.pricerd, "--listen", "127.0.0.1:0", "--metrics-listen", "",
                 "--devices", "cpu", "--pinned-memory", value],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                for line in proc.stdout:
                    if "pinned host memory bound" in line:
                        self.assertIn("pinned host memory bound %d bytes" % logged, line)
                        break
                else:
                    self.fail("pricerd logged no pinned memory bound")
            finally:
                proc.terminate()
                proc.communicate(timeout=scaled(30))

    def test_bad_byte_count_refused(self):
        out = self.refused("--max-request-bytes", "12XB")
        self.assertIn("--max-request-bytes", out)
        self.assertIn("'12XB'", out)

    def test_unknown_flag_is_a_usage_error(self):
        out = self.refused("--bogus", "1")
        self.assertIn("--bogus", out)

    def test_value_outside_a_flags_range_is_a_usage_error(self):
        out = self.refused("--max-shards-in-flight", "0")
        self.assertIn("--max-shards-in-flight", out)

    def test_help_and_version_exit_0(self):
        for flag, text in (("--help", "--device-memory"), ("--version", "pricerd")):
            proc = self.run_pricerd(flag)
            self.assertEqual(proc.returncode, 0, proc.stdout)
            self.assertIn(text, proc.stdout)

    def test_port_in_use_cannot_start(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            out = self.refused(listen="127.0.0.1:%d" % port, code=1)
        self.assertIn(str(port), out)

    def test_files_a_flag_names_are_usage_errors(self):
        out = self.refused("--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem")
        self.assertIn("/nonexistent/cert.pem", out)
        with tempfile.TemporaryDirectory() as tmp:
            tokens = os.path.join(tmp, "tokens")
            with open(tokens, "w") as f:
                f.write("risk-a s3cret\n")
            os.chmod(tokens, 0o644)
            out = self.refused("--auth-tokens-file", tokens)
            self.assertIn(tokens, out)

    def test_listen_address_that_is_not_host_port_is_a_usage_error(self):
        for listen in ("nohostport", "127.0.0.1:70000"):
            self.assertIn("'%s'" % listen, self.refused(listen=listen))


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
