"""A split request survives a host lost mid-job, for real (multi_host.py):
killed (SIGKILL) or cut off (its link down), the run retries the missing
columns on the other hosts and still writes the same bytes as one server."""

import re
import signal
import sys
import time

import multi_host
from multi_host import MultiHostTestCase
from multi_host_network import sh

RETRY = re.compile(r"pricer: columns \[\d+, \d+\) \(\d+ missing\) broke with \d+ \w+: .*; "
                   r"retry 1 of 3 in 0\.2 s")
# A SIGKILL is seen at once (RST); a cut link only by keepalive, which with
# 10 s pings and a 5 s timeout retried 4 to 15 s after the cut.
KEEPALIVE_SECONDS = 15


class MultiHostFailoverTest(MultiHostTestCase):
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
        # How long the run may take once a host is cut: the keepalive, then
        # the rest, retried parts included, in at most twice the one-server
        # run (measured 9.7 s, and 19.0 s from a link cut to the run's end).
        limit = KEEPALIVE_SECONDS + 2 * self.reference_seconds
        rc = cli.wait(limit)
        seconds = time.monotonic() - cli.started
        if rc is None:
            cli.kill()
            self.fail(f"{label}: the run still hangs {limit:.0f} s after {victim} "
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


if __name__ == "__main__":
    multi_host.main()
