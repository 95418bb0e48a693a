"""Several hosts, for real: network namespaces h1..h4 joined by a Linux bridge
(in a namespace of its own), one pricerd per host on its own address, and a
client namespace where the name pricer-headless.test resolves to the
addresses of h1..h3 (a hosts file that `ip netns exec` mounts over
/etc/hosts, one line per address, as a headless Service's DNS answers).
`pricer price --target dns:///pricer-headless.test:50051 --split 6` spreads
its parts over the three servers, writes the same bytes as one server, still
does when a host is killed or its link is cut mid-job, and a long-lived
client finds a fourth host added to the name once --max-connection-age-seconds
has made it resolve again. Only addresses inside these namespaces are used:
the client namespace has no route out, and its resolv.conf names a
nameserver it has no route to. Needs root (CI runs as root); skipped without
it or without `ip netns`."""

import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

ARGS = None

NAME = "pricer-headless.test"
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
RETRY = re.compile(r"pricer: columns \[\d+, \d+\) \(\d+ missing\) broke with \d+ \w+: .*; "
                   r"retry 1 of 3 in 0\.2 s")
# How long a split run may take once a host is cut. A healthy run takes
# ~3 s; a SIGKILL is seen at once (RST); a cut link only by keepalive, which
# with 10 s pings and a 5 s timeout retried 4 to 15 s after the cut.
CUT_RUN_LIMIT_SECONDS = 30


def sh(*command, check=True):
    return subprocess.run(command, capture_output=True, text=True, check=check)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Network:
    """Namespaces <prefix>-sw (the bridge br0), <prefix>-c (the client) and
    <prefix>-h1..h4, each with lo up and an eth0 whose veth peer is a port
    of br0, addressed 10.213.<k>.1 (client) and 10.213.<k>.<1+i> (host i)."""

    HOSTS = ("h1", "h2", "h3", "h4")

    def __init__(self):
        self.prefix = f"prc{os.getpid()}"
        self.subnet = self._free_subnet()
        self.namespaces = []
        self.etc = f"/etc/netns/{self.ns('c')}"
        atexit.register(self.delete)
        self.create()

    def ns(self, tag):
        return f"{self.prefix}-{tag}"

    @property
    def unrouted_nameserver(self):
        return self.subnet.replace("10.213.", "10.214.", 1) + ".53"

    def address(self, host):
        return f"{self.subnet}.{2 + self.HOSTS.index(host)}"

    @staticmethod
    def _free_subnet():
        """A 10.213.k.0/24 that no address or route of this machine touches,
        so that nothing in the namespaces can be mistaken for a real host."""
        used = sh("ip", "-4", "addr").stdout + sh("ip", "-4", "route").stdout
        for k in range(os.getpid() % 200 + 20, 255):
            if f"10.213.{k}." not in used:
                return f"10.213.{k}"
        raise RuntimeError("no free 10.213.k.0/24 subnet")

    def _add_namespace(self, tag):
        sh("ip", "netns", "add", self.ns(tag))
        self.namespaces.append(self.ns(tag))
        sh("ip", "-n", self.ns(tag), "link", "set", "lo", "up")

    def create(self):
        self._add_namespace("sw")
        sw = self.ns("sw")
        sh("ip", "-n", sw, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", sw, "link", "set", "br0", "up")
        addresses = [("c", f"{self.subnet}.1")] + [(h, self.address(h)) for h in self.HOSTS]
        for tag, address in addresses:
            self._add_namespace(tag)
            port = f"{self.prefix}{tag}"  # at most 15 characters: prc<7 digits>h1
            sh("ip", "link", "add", "eth0", "netns", self.ns(tag), "type", "veth", "peer", "name",
               port, "netns", sw)
            sh("ip", "-n", sw, "link", "set", port, "master", "br0", "up")
            sh("ip", "-n", self.ns(tag), "addr", "add", f"{address}/24", "dev", "eth0")
            sh("ip", "-n", self.ns(tag), "link", "set", "eth0", "up")
        # `ip netns exec <client>` mounts these over /etc/hosts and
        # /etc/resolv.conf. gRPC's c-ares resolver reads the hosts file; what
        # that lacks (the AAAA records) it asks a nameserver, here one the
        # namespace has no route to, so the query fails at once and sends
        # nothing (one on a closed local port would cost 3 s per resolution).
        os.makedirs(self.etc)
        with open(f"{self.etc}/resolv.conf", "w") as f:
            f.write(f"nameserver {self.unrouted_nameserver}\n")
        self.name_hosts(self.HOSTS[:3])

    def name_hosts(self, hosts):
        """Points the name at these hosts, one line per address. In place
        (same inode): a bind mount of the file sees it, a renamed one not."""
        lines = "".join(f"{self.address(h)} {NAME}\n" for h in hosts)
        path = f"{self.etc}/hosts"
        with open(path, "r+" if os.path.exists(path) else "w") as f:
            f.write(lines)
            f.truncate()

    def exec_args(self, tag, *command):
        return ["ip", "netns", "exec", self.ns(tag), *command]

    def delete(self):
        for namespace in reversed(self.namespaces):
            # A process left inside (it should not be) would keep the
            # network alive: kill exactly those.
            for pid in sh("ip", "netns", "pids", namespace, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            sh("ip", "netns", "delete", namespace, check=False)
        self.namespaces = []
        shutil.rmtree(self.etc, ignore_errors=True)


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
                "--devices", "cpu", "--device-memory", BUDGET, "--drain-seconds", "2",
                "--max-connection-age-seconds", str(CONNECTION_AGE_SECONDS)),
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
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
                self.proc.wait(timeout=10)
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


class MultiHostTest(unittest.TestCase):
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
            rc = cli.wait(120)
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

    def test_split_spreads_over_three_hosts(self):
        cli = self.split_run("split")
        rc = cli.wait(120)
        seconds = time.monotonic() - cli.started
        self.assertEqual(rc, 0, cli.stderr_text())
        shards = self.all_shards()
        print(f"\nsplit over 3 hosts: {seconds:.1f} s, shards {shards}", file=sys.stderr)
        for host in Network.HOSTS[:3]:
            self.assertGreater(shards[host], 0, f"{host} took no part: {shards}; "
                               f"{self.servers[host].read_log()}")
        self.assertEqual(shards["h4"], 0, "h4 is not in the name yet took work")
        self.assert_same_as_one_server(cli)

    def cut_mid_job(self, cut, label):
        """Starts a split run, cuts h2 with `cut` once it has done a shard,
        and checks that the run retries and still ends with the same bytes."""
        victim = "h2"
        cli = self.split_run(label)
        while self.shards_done(victim) == 0:
            self.assertIsNone(cli.proc.poll(), "the run ended before the victim did a shard")
            time.sleep(0.05)
        self.assertIsNone(cli.proc.poll(), "the run ended before the cut: make the job bigger")
        cut_at = time.monotonic()
        cut(victim)
        rc = cli.wait(CUT_RUN_LIMIT_SECONDS)
        seconds = time.monotonic() - cli.started
        if rc is None:
            cli.kill()
            self.fail(f"{label}: the run still hangs {CUT_RUN_LIMIT_SECONDS} s after {victim} "
                      f"was cut ({time.monotonic() - cut_at:.1f} s since); stderr: "
                      f"{cli.stderr_text()!r}")
        self.assertEqual(rc, 0, cli.stderr_text())
        retries = [at for at, line in cli.stderr if RETRY.search(line)]
        self.assertTrue(retries, f"no retry logged: {cli.stderr_text()}")
        self.assert_same_as_one_server(cli)
        # The victim is not asked: a cut link would hold the question too.
        shards = {host: self.shards_done(host) for host in ("h1", "h3")}
        for host in ("h1", "h3"):
            self.assertGreater(shards[host], 0, f"{host} took no part: {shards}")
        print(f"\n{label}: cut {cut_at - cli.started:.1f} s into the run, first retry "
              f"{retries[0] - cut_at:.1f} s after the cut, run {seconds:.1f} s", file=sys.stderr)

    def test_host_killed_mid_job(self):
        def kill(host):
            self.servers[host].proc.send_signal(signal.SIGKILL)
            self.servers[host].proc.wait()
        self.cut_mid_job(kill, "SIGKILL")

    # A host whose link goes down sends the client nothing: no RST, no FIN.
    # The client's keepalive pings (every 10 s, 5 s to answer) find it out;
    # without them its calls on that link would hang until TCP gives up.
    def test_link_cut_mid_job(self):
        self.cut_mid_job(lambda host: sh("ip", "-n", self.network.ns(host), "link", "set",
                                         "eth0", "down"), "link down")

    def test_fourth_host_joins_after_connection_age(self):
        job = {"issuers": ISSUERS, "paths": PATHS, "scenarios": COLUMNS, "seed": SEED,
               "split": SPLIT}
        # Past the resolver's next allowed resolution, plus a connection age
        # for every connection to have been asked to go.
        wait = DNS_MIN_SECONDS_BETWEEN_RESOLUTIONS + 2 * CONNECTION_AGE_SECONDS
        client = subprocess.Popen(self.network.exec_args(
            "c", sys.executable, os.path.join(HERE, "multi_host_client.py"), TARGET,
            json.dumps(job), self.dir.name, str(wait)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(client.stdout.close)
        self.addCleanup(client.stdin.close)
        self.addCleanup(client.wait)
        self.addCleanup(client.kill)
        first = json.loads(client.stdout.readline() or "null")
        self.assertIsNotNone(first, "the Python client failed (its stderr is above)")
        before = self.all_shards()
        for host in Network.HOSTS[:3]:
            self.assertGreater(before[host], 0, f"{host} took no part: {before}")
        self.assertEqual(before["h4"], 0, "h4 is not in the name yet took work")
        self.network.name_hosts(Network.HOSTS)
        added_at = first["since_first_call"]
        client.stdin.write("added\n")
        client.stdin.flush()
        second = json.loads(client.stdout.readline() or "null")
        self.assertIsNotNone(second, "the Python client failed (its stderr is above)")
        self.assertEqual(client.wait(30), 0)
        after = self.all_shards()
        print(f"\nfourth host: first run {first['seconds']:.1f} s, h4 named "
              f"{added_at:.1f} s after the first call, second run at "
              f"{second['since_first_call'] - second['seconds']:.1f} s took "
              f"{second['seconds']:.1f} s; shards {before} -> {after}", file=sys.stderr)
        self.assertGreater(after["h4"], 0, f"h4 took no part after it was named: {after}")
        reference = np.load(os.path.join(self.dir.name, "one_server_full.npy"))
        for run in (first, second):
            full = np.load(run["full"])
            self.assertEqual((full.dtype, full.shape), (reference.dtype, reference.shape))
            self.assertEqual(full.tobytes(order="F"), reference.tobytes(order="F"),
                             f"{run['full']} differs from the one-server run")
        statistics = [np.load(os.path.join(self.dir.name, f"python_{k}_stats.npz"))
                      for k in (1, 2)]
        self.assertEqual(sorted(statistics[0].files), sorted(statistics[1].files))
        for name in statistics[0].files:
            self.assertEqual(statistics[0][name].tobytes(), statistics[1][name].tobytes(), name)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
