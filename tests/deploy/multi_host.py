"""What the multi-host tests (multi_host_*_test.py) share: one pricerd per
host of a multi_host_network.Network on its own address, `pricer price` run
in the client namespace, and a TestCase that prices the job once on one
server (the reference every split run must match byte for byte) and gives
each test a fresh network with a pricerd on each of h1..h4. Needs root (CI
runs as root); skipped without it or without `ip netns`."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)
from multi_host_network import NAME, Network, sh  # noqa: E402

ARGS = None  # the --pricerd and --pricer paths, once main() has read them

PORT = 50051
TARGET = f"dns:///{NAME}:{PORT}"
# Servers ask clients to reconnect (and so to resolve the name again) after
# this long; calls running on an old connection finish on it.
CONNECTION_AGE_SECONDS = 2
# gRPC's DNS resolver resolves a name at most once per
# grpc.dns_min_time_between_resolutions_ms (default 30 s; multi_host_client.py
# sets 2 s), counted from the channel's first resolution: a GOAWAY before then
# re-resolves only then.
DNS_MIN_SECONDS_BETWEEN_RESOLUTIONS = 2
# Seconds of GEMM on two cores, in many pieces: ST (1000 paths x 20,000
# issuers) is 80 MB of a 128 MiB budget, so each of the 6 parts (1500
# columns) runs as 6 or 7 shards of 256 columns, and chunks keep arriving.
BUDGET = "128MiB"
ISSUERS, PATHS, COLUMNS, SEED = 20000, 1000, 9000, 3
JOB = ["--issuers", str(ISSUERS), "--paths", str(PATHS), "--scenarios", str(COLUMNS),
       "--seed", str(SEED)]
SPLIT = 6


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Server:
    """pricerd in one host namespace, on that host's address."""

    def __init__(self, network, host, log_dir):
        self.network, self.host = network, host
        self.target = f"{network.address(host)}:{PORT}"
        self.log = os.path.join(log_dir, f"pricerd_{host}.log")
        with open(self.log, "w") as log:
            # `ip netns exec` execs pricerd itself: self.proc.pid is pricerd's.
            self.proc = subprocess.Popen(network.exec_args(
                host, ARGS.pricerd, "--listen", self.target, "--metrics-listen", "",
                # The job may use the whole budget (not --max-job-bytes' quarter).
                "--devices", "cpu", "--device-memory", BUDGET, "--max-job-bytes", "1",
                "--drain-seconds", "2",
                "--max-connection-age-seconds", str(CONNECTION_AGE_SECONDS)),
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + scaled(30)
        while "listening on" not in self.read_log():
            if self.proc.poll() is not None:
                raise RuntimeError(f"pricerd on {host} exited: {self.read_log()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"pricerd on {host} did not start: {self.read_log()}")
            time.sleep(0.05)

    def read_log(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=scaled(10))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Cli:
    """`pricer price` running in the client namespace; its stderr lines with
    the time each arrived."""

    def __init__(self, network, target, out_prefix, *extra):
        self.outputs = (f"{out_prefix}_full.npy", f"{out_prefix}_stats.csv")
        self.proc = subprocess.Popen(
            network.exec_args("c", ARGS.pricer, "price", "--target", target, *JOB,
                              "--full-out", self.outputs[0], "--stats-out", self.outputs[1],
                              *extra),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.started = time.monotonic()
        self.stderr = []  # (time.monotonic() when it arrived, line)
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stderr, True)),
                         threading.Thread(target=self._read, args=(self.proc.stdout, False))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, keep):
        for line in stream:
            if keep:
                self.stderr.append((time.monotonic(), line.rstrip("\n")))

    def wait(self, timeout):
        """The exit status, or None if it still runs after `timeout` seconds."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        for reader in self._readers:
            reader.join()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.wait(None)

    def stderr_text(self):
        return "\n".join(line for _, line in self.stderr)


class MultiHostTestCase(unittest.TestCase):
    """The one-server reference, and a fresh network with four
    servers per test."""

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root: it creates network namespaces")
        if shutil.which("ip") is None:
            raise unittest.SkipTest("needs the ip command (iproute2) for network namespaces")
        probe = f"prc{os.getpid()}-probe"
        made = sh("ip", "netns", "add", probe, check=False)
        if made.returncode != 0:
            raise unittest.SkipTest(f"ip netns is unavailable here: {made.stderr.strip()}")
        sh("ip", "netns", "delete", probe)
        cls.dir = tempfile.TemporaryDirectory(prefix="multi_host_")
        # The reference: the whole job, one call, on one server.
        network = Network()
        try:
            server = Server(network, "h1", cls.dir.name)
            started = time.monotonic()
            cli = Cli(network, server.target, os.path.join(cls.dir.name, "one_server"))
            rc = cli.wait(scaled(120))
            cls.reference_seconds = time.monotonic() - started
            server.stop()
            assert rc == 0, f"the one-server run failed ({rc}): {cli.stderr_text()}"
        finally:
            network.delete()
        cls.reference = [digest(path) for path in cli.outputs]
        print(f"\none server: {cls.reference_seconds:.1f} s", file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def setUp(self):
        # A network of its own per test, with no TCP or ARP state left by the
        # one before: with one network for all, a server restarted on the
        # same address twice took no part of a split run (a connection that
        # is not up within the CLI's few milliseconds of warm-up gets none;
        # a SYN that meets a TIME-WAIT of the old server waits 1 s).
        self.network = Network()
        self.addCleanup(self.network.delete)
        self.clis = []
        self.servers = {}
        self.addCleanup(self.stop_all)
        for host in Network.HOSTS:
            self.servers[host] = Server(self.network, host, self.dir.name)

    def stop_all(self):
        for cli in self.clis:
            cli.kill()
        for server in self.servers.values():
            server.stop()

    def shards_done(self, host):
        """The shards `host`'s pricerd has done, over all its devices, asked
        from the client namespace."""
        reply = sh(*self.network.exec_args("c", ARGS.pricer, "devices", "--target",
                                           self.servers[host].target, "--json"))
        devices = json.loads(reply.stdout)["devices"]
        return sum(int(device.get("shardsDone", 0)) for device in devices)

    def all_shards(self):
        """shards_done of each host whose pricerd runs."""
        return {host: self.shards_done(host) for host, server in self.servers.items()
                if server.proc.poll() is None}

    def split_run(self, label):
        cli = Cli(self.network, TARGET, os.path.join(self.dir.name, label), "--split", str(SPLIT))
        self.clis.append(cli)
        return cli

    def assert_same_as_one_server(self, cli):
        self.assertEqual([digest(path) for path in cli.outputs], self.reference,
                         "the split run's files differ from the one-server run's")


def main():
    """Runs the tests of the calling script (its __main__ module)."""
    global ARGS
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
