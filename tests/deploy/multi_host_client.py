"""A long-lived Python client for multi_host_spread_test.py, run inside the test's
client network namespace: one pricer_client.Client, so one gRPC channel and
one DNS resolver, for the whole run. It prices the job once, says so on
stdout, waits for a line on stdin (the test has added an address to the
name), keeps calling until SERVERS different servers have answered
(ListDevicesReply.server_id: the resolver has resolved again and the new
server is connected), for at most LIMIT_SECONDS, and at once prices the job
again.

Usage: multi_host_client.py TARGET JOB_JSON OUT_DIR SERVERS LIMIT_SECONDS
Each event is one JSON line on stdout."""

import json
import os
import sys
import time

import numpy as np

from pricer_client import Client


def main():
    target, job, out_dir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    servers, limit = int(sys.argv[4]), float(sys.argv[5])
    # The channel resolves the name when the first call starts; gRPC's DNS
    # resolver then waits grpc.dns_min_time_between_resolutions_ms (30 s by
    # default; 2 s here, for the test's time) before it resolves again,
    # however often a GOAWAY asks it to.
    client = Client(target, options=[("grpc.dns_min_time_between_resolutions_ms", 2000)])
    first_call = time.monotonic()
    seen = set()  # the servers that answered after the name changed
    for run in (1, 2):
        if run == 2:
            sys.stdin.readline()
            # A client in use, from the moment the name changed: an idle
            # Python channel reads nothing, so the servers' GOAWAYs (each
            # connection's age) would wait for the next call, and the
            # resolver would not resolve again. The second run starts as soon
            # as the new server has answered, while its connection is young:
            # the servers end each connection after about
            # CONNECTION_AGE_SECONDS (multi_host.py), and a run whose parts
            # start while the new server reconnects leaves it out (round
            # robin picks among the connected; a fixed wait of two ages
            # after the name changed met its second reconnection in CI).
            named = time.monotonic()
            while True:
                seen.add(client.devices().server_id)
                if len(seen) >= servers or time.monotonic() >= named + limit:
                    break
                time.sleep(0.1)
        started = time.monotonic()
        full = os.path.join(out_dir, f"python_{run}_full.npy")
        result = client.price(**job, full=full)
        np.savez(os.path.join(out_dir, f"python_{run}_stats.npz"), **result.statistics)
        print(json.dumps({"run": run, "seconds": time.monotonic() - started,
                          "since_first_call": time.monotonic() - first_call, "full": full,
                          "servers_seen": len(seen)}),
              flush=True)
    client.close()


if __name__ == "__main__":
    main()
