"""Split requests over several hosts, for real (multi_host.py):
`pricer price --target dns:///pricer-headless.test:50051 --split 6` spreads
its parts over the three servers of the name and writes the same bytes as one
server, and a long-lived client finds a fourth host added to the name once
--max-connection-age-seconds has made it resolve again."""

import json
import os
import subprocess
import sys
import time

import numpy as np

import multi_host
from multi_host import (COLUMNS, CONNECTION_AGE_SECONDS, DNS_MIN_SECONDS_BETWEEN_RESOLUTIONS, HERE,
                        ISSUERS, PATHS, SEED, SPLIT, TARGET, MultiHostTestCase)
from multi_host_network import Network
from binaries import scaled  # tests/binaries.py, on sys.path through multi_host


class MultiHostSpreadTest(MultiHostTestCase):
    def test_split_spreads_over_three_hosts(self):
        cli = self.split_run("split")
        rc = cli.wait(scaled(120))
        seconds = time.monotonic() - cli.started
        self.assertEqual(rc, 0, cli.stderr_text())
        shards = self.all_shards()
        print(f"\nsplit over 3 hosts: {seconds:.1f} s, shards {shards}", file=sys.stderr)
        for host in Network.HOSTS[:3]:
            self.assertGreater(shards[host], 0, f"{host} took no part: {shards}; "
                               f"{self.servers[host].read_log()}")
        self.assertEqual(shards["h4"], 0, "h4 is not in the name yet took work")
        self.assert_same_as_one_server(cli)

    def test_fourth_host_joins_after_connection_age(self):
        job = {"issuers": ISSUERS, "paths": PATHS, "scenarios": COLUMNS, "seed": SEED,
               "split": SPLIT}
        # The client waits for every named host to answer it: past the
        # resolver's next allowed resolution and a connection age, which the
        # limit leaves many times over.
        limit = scaled(10 * (DNS_MIN_SECONDS_BETWEEN_RESOLUTIONS + 2 * CONNECTION_AGE_SECONDS))
        client = subprocess.Popen(self.network.exec_args(
            "c", sys.executable, os.path.join(HERE, "multi_host_client.py"), TARGET,
            json.dumps(job), self.dir.name, str(len(Network.HOSTS)), str(limit)),
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
        self.assertEqual(client.wait(scaled(30)), 0)
        after = self.all_shards()
        print(f"\nfourth host: first run {first['seconds']:.1f} s, h4 named "
              f"{added_at:.1f} s after the first call, second run at "
              f"{second['since_first_call'] - second['seconds']:.1f} s took "
              f"{second['seconds']:.1f} s ({second['servers_seen']} servers answered before "
              f"it); shards {before} -> {after}", file=sys.stderr)
        self.assertEqual(second["servers_seen"], len(Network.HOSTS),
                         "not every named host answered the client within its limit")
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
    multi_host.main()
