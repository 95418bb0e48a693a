"""What the Python tests of a real pricerd share: the server on a loopback
port, and the CLI run against it. Their waits take seconds on an unloaded
machine and scale them by PRICER_TEST_TIME_SCALE (tests/binaries.py)."""

import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time
import tty
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import scaled  # noqa: E402  (tests/binaries.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "service"))
from metrics_scrape import METRICS_LINE, Samples, scrape  # noqa: E402  (tests/service)
from wire_format import read_varint  # noqa: E402  (tests/wire_format.py)


# For tests whose tiny device budget is the point: a job may hold all of it,
# not --max-job-bytes' default quarter.
WHOLE_BUDGET = ("--max-job-bytes", "1")


class Server:
    """pricerd on 127.0.0.1, a free port chosen by the kernel."""

    def __init__(self, pricerd, devices="cpu", device_memory="1GiB", flags=()):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [pricerd, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--devices", devices,
             "--device-memory", device_memory, *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + scaled(30)
        self.port = self.metrics_port = None
        while self.metrics_port is None and time.time() < deadline:
            time.sleep(0.05)
            with open(self.log.name) as f:
                log = f.read()
            port = re.search(r"\(port (\d+)\)", log)
            metrics = re.search(METRICS_LINE, log)
            if port and metrics:
                self.port, self.metrics_port = int(port.group(1)), int(metrics.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError("pricerd exited: " + log)
        if self.port is None:
            raise RuntimeError("pricerd did not report its ports")
        self.target = "127.0.0.1:%d" % self.port

    def metric(self, name):
        """The sum of the series of metric `name` in a scrape of /metrics (0
        when it has none)."""
        return Samples(scrape(self)).total(name, default=0)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=scaled(30))
        self.log.close()
        os.unlink(self.log.name)


def run_cli(pricer, *args, timeout=300):
    """The CLI at `pricer` with `args`, its output captured as text; killed
    after `timeout` (scaled)."""
    return subprocess.run([pricer, *args], capture_output=True, text=True,
                          timeout=scaled(timeout))


def run_on_terminal(args, timeout=120):
    """`args` run with stderr on a pseudo-terminal (stdout discarded):
    (exit code, what it wrote there as text, wall seconds). `timeout`
    (scaled): how long a silent terminal or the exit is waited for."""
    timeout = scaled(timeout)
    master, slave = pty.openpty()
    tty.setraw(slave)  # no "\n" -> "\r\n"
    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            break
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the terminal has no writer left
            break
        if not data:
            break
        out += data
    proc.wait(timeout=timeout)
    wall = time.monotonic() - start
    os.close(master)
    return proc.returncode, out.decode(), wall


class CliTestCase(unittest.TestCase):
    """One pricerd for the test class (with `server_flags`), a scratch folder,
    and the CLI run against that server. The script sets `binaries` (from
    parse_binaries()) before unittest.main."""

    binaries = None
    server_flags = ()
    device_memory = "1GiB"

    @classmethod
    def setUpClass(cls):
        cls.server = Server(cls.binaries.pricerd, device_memory=cls.device_memory,
                            flags=cls.server_flags)
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def pricer(self, *args, check=True):
        """`pricer price --target <the server> args`; exit 0 unless check=False."""
        proc = run_cli(self.binaries.pricer, "price", "--target", self.server.target, *args)
        if check:
            self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc

    def write(self, name, lines):
        """A text file of `lines` in the scratch folder; its path."""
        path = self.path(name)
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        return path

    def kill_once_journaled(self, args, journal, size):
        """Starts `pricer price --target <the server> args` and kills it once
        its `journal` holds more than `size` bytes of whole records (some
        chunks: a record the kill tears is dropped on --resume, so bytes of a
        record still being written do not count); fails the test when the
        run ended before that."""
        proc = subprocess.Popen([self.binaries.pricer, "price", "--target", self.server.target,
                                 *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + scaled(60)
        while proc.poll() is None and time.time() < deadline:
            # The whole records are read only once the file is past `size`.
            if (os.path.exists(journal) and os.path.getsize(journal) > size
                    and journal_whole_bytes(journal) > size):
                break
            time.sleep(0.002)
        self.assertIsNone(proc.poll(), "the run ended before the kill: size the job up")
        proc.kill()
        proc.wait(timeout=scaled(60))


def journal_whole_bytes(path):
    """The bytes of a progress journal (client/lib/progress_journal.h: two
    header lines, then records of a varint length and that many bytes) up to
    the end of its last whole record."""
    with open(path, "rb") as f:
        data = f.read()
    at = data.find(b"\n", data.find(b"\n") + 1) + 1
    if at == 0:
        return 0
    while True:
        try:
            length, end = read_varint(data, at)
        except IndexError:  # the file ends inside the length
            return at
        if end + length > len(data):
            return at
        at = end + length


def read_csv_rows(path):
    """A CSV's header line and its rows, each a dict of the cells as text."""
    with open(path) as f:
        lines = f.read().splitlines()
    names = lines[0].split(",")
    return lines[0], [dict(zip(names, line.split(","))) for line in lines[1:]]
