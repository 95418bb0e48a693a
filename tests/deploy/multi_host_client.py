"""A long-lived Python client for multi_host_spread_test.py, run inside the test's
client network namespace: one pricer_client.Client, so one gRPC channel and
one DNS resolver, for the whole run. It prices the job once, says so on
stdout, waits for a line on stdin (the test has added an address to the
name), keeps calling until the resolver may have resolved again and
SERVERS different servers have answered (ListDevicesReply.server_id), for at
most LIMIT_SECONDS, and prices the job again.

Usage: multi_host_client.py TARGET JOB_JSON OUT_DIR WAIT_SECONDS SERVERS LIMIT_SECONDS
Each event is one JSON line on stdout."""

import json
import os
import sys
import time

import numpy as np

from pricer_client import Client


def main():
    target, job, out_dir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    wait, servers, limit = float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
    # The channel resolves the name when the first call starts; gRPC's DNS
    # resolver then waits grpc.dns_min_time_between_resolutions_ms (30 s by
    # default; 2 s here, for the test's time) before it resolves again,
    # however often a GOAWAY asks it to.
    client = Client(target, options=[("grpc.dns_min_time_between_resolutions_ms", 2000)])
    first_call = time.monotonic()
    for run in (1, 2):
        if run == 2:
            sys.stdin.readline()
            # A client in use, from the moment the name changed: the resolver
            # must resolve again after that (a first run longer than `wait`,
            # on a slow machine, must not let the second start before). An
            # idle Python channel reads nothing: the servers' GOAWAYs would
            # wait for the next call, then every connection would go and come
            # back at once, and a part would miss a server that reconnected a
            # few milliseconds late. Then on until the new server has
            # answered too: on a loaded machine its connection may come
            # after `wait`, and the parts would start without it.
            named = time.monotonic()
            seen = set()
            while time.monotonic() < named + wait or (
                    len(seen) < servers and time.monotonic() < named + limit):
                seen.add(client.devices().server_id)
                time.sleep(0.2)
        started = time.monotonic()
        full = os.path.join(out_dir, f"python_{run}_full.npy")
        result = client.price(**job, full=full)
        np.savez(os.path.join(out_dir, f"python_{run}_stats.npz"), **result.statistics)
        print(json.dumps({"run": run, "seconds": time.monotonic() - started,
                          "since_first_call": time.monotonic() - first_call, "full": full,
                          "servers_seen": len(seen) if run == 2 else None}),
              flush=True)
    client.close()


if __name__ == "__main__":
    main()
