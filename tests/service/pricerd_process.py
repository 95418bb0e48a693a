"""A real pricerd process for the operations tests (operations_*_test.py):
pricerd on 127.0.0.1 with free ports, its output in a file, stopped with
SIGTERM and required to exit 0; pricerd runs expected to exit by themselves
(refused flags, --version); the tokens file the tests use; a TestCase whose
servers, channels and folders clean themselves up; and main(), which reads
the --pricerd and --pricer paths ctest passes and runs the calling script's
tests. Every test starts its own pricerd and stops it; all traffic stays on
loopback."""

import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

from pricer_client._proto import pricer_pb2_grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)
from metrics_scrape import METRICS_LINE  # noqa: E402  (this folder)

ARGS = None  # the --pricerd and --pricer paths, once main() has read them
CRASH_CODES = (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS, 128 + signal.SIGABRT,
               128 + signal.SIGSEGV)


def server_environment(extra=None):
    """The test's environment without PRICER_* settings (every flag reads
    one) and without thread limits: OpenBLAS runs multi-threaded, its default."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PRICER_") and k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env.update(extra or {})
    return env


class Server:
    """pricerd on 127.0.0.1 with a free port (and a free metrics port unless
    metrics=False), its output in a file; one cpu device of 1 GiB unless
    `devices` and `device_memory` say otherwise."""

    def __init__(self, flags=(), metrics=True, env=None, devices="cpu", device_memory="1GiB"):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.final_output = None  # what pricerd wrote, once stopped
        self.signalled = False  # whether the test sent it a signal (signal())
        self.command = [ARGS.pricerd, "--listen", "127.0.0.1:0",
                        "--metrics-listen", "127.0.0.1:0" if metrics else "",
                        "--devices", devices, "--device-memory", device_memory, *flags]
        self.proc = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=server_environment(env))
        self.port = self._wait_for(r"\(port (\d+)\)")
        self.metrics_port = self._wait_for(METRICS_LINE) if metrics else None
        self.target = "127.0.0.1:%d" % self.port

    def _wait_for(self, pattern, timeout=30):
        timeout = scaled(timeout)
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(pattern, self.output())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError("pricerd exited with %d: %s\n%s" % (
                    self.proc.returncode, " ".join(self.command), self.output()))
            time.sleep(0.05)
        raise RuntimeError("pricerd printed no /%s/ in %.0f s:\n%s" % (
            pattern, timeout, self.output()))

    def output(self):
        if self.final_output is not None:
            return self.final_output
        with open(self.log.name) as f:
            return f.read()

    def signal(self, number):
        self.signalled = True
        self.proc.send_signal(number)

    def stop(self):
        """SIGTERM, and pricerd must exit 0 (a second SIGTERM, then SIGKILL, if
        it hangs); a pricerd that had exited before, without a signal from the
        test, fails it with its exit status and the end of its output (a
        crash's signal and stack). Once stopped, output() keeps what it
        wrote."""
        if self.final_output is not None:
            return
        try:
            if self.proc.poll() is not None and not self.signalled:
                raise AssertionError("pricerd exited with %d before the test stopped it:\n%s" % (
                    self.proc.returncode, self.output()[-8000:]))
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=scaled(15))
                except subprocess.TimeoutExpired:
                    self.proc.terminate()
                    try:
                        self.proc.wait(timeout=scaled(5))
                    except subprocess.TimeoutExpired:
                        self.proc.kill()
                        self.proc.wait()
                    raise AssertionError("pricerd did not exit within %.0f s of SIGTERM:\n%s" % (
                        scaled(15), self.output()[-4000:]))
                if self.proc.returncode != 0:
                    raise AssertionError("pricerd exited with %d after SIGTERM:\n%s" % (
                        self.proc.returncode, self.output()[-4000:]))
        finally:
            self.final_output = self.output()
            self.log.close()
            os.unlink(self.log.name)


def rss_bytes(pid):
    """The resident set of process `pid`, bytes (VmRSS)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for pid %d" % pid)


def run_pricerd(*flags, timeout=20, env=None):
    """pricerd expected to exit by itself (refused flags, --version): its
    return code and output; a pricerd still running after `timeout` (scaled)
    is killed and reported as None."""
    command = [ARGS.pricerd, *flags]
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=scaled(timeout), env=server_environment(env))
    except subprocess.TimeoutExpired as e:
        out = e.output.decode() if isinstance(e.output, bytes) else (e.output or "")
        return None, out
    return proc.returncode, proc.stdout


# ---- token files ----

def bearer(token):
    return (("authorization", "Bearer " + token),)


def write_tokens(directory, mode=0o600):
    """A tokens file for alice (max priority 0) and bob (max priority 10):
    its path and {client: token}."""
    tokens = {"alice": secrets.token_hex(16), "bob": secrets.token_hex(16)}
    path = os.path.join(directory, "tokens")
    with open(path, "w") as f:
        f.write("# client-name token [max-priority]\n\n")
        f.write("alice %s 0\n" % tokens["alice"])
        f.write("bob %s 10\n" % tokens["bob"])
    os.chmod(path, mode)
    return path, tokens


class OperationsTestCase(unittest.TestCase):
    """Servers, channels and folders that clean themselves up."""

    def start_server(self, *flags, metrics=True, env=None):
        server = Server(flags, metrics=metrics, env=env)
        self.addCleanup(server.stop)
        return server

    def channel(self, target, credentials=None):
        channel = (grpc.secure_channel(target, credentials) if credentials is not None
                   else grpc.insecure_channel(target))
        self.addCleanup(channel.close)
        return channel

    def stub(self, server):
        return pricer_pb2_grpc.PricerStub(self.channel(server.target))

    def directory(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        return folder.name

    def assertCall(self, reader, code, *message_parts):
        self.assertEqual(reader.code, code, reader.details)
        for part in message_parts:
            self.assertRegex(reader.details, part)


def main():
    """Runs the tests of the calling script (its __main__ module)."""
    global ARGS
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
