"""The network of the multi-host tests (multi_host_*_test.py): network
namespaces h1..h4 joined by a Linux bridge (in a namespace of its own), and
a client namespace where the name pricer-headless.test resolves to the
addresses of some of them (a hosts file that `ip netns exec` mounts over
/etc/hosts, one line per address, as a headless Service's DNS answers). Only
addresses inside these namespaces are used: the client namespace has no route
out, and its resolv.conf names a nameserver it has no route to."""

import atexit
import os
import shutil
import signal
import subprocess


NAME = "pricer-headless.test"


def sh(*command, check=True):
    return subprocess.run(command, capture_output=True, text=True, check=check)


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
