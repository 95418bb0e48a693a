#!/usr/bin/env python3
"""One price() of the original example's full SC by the Python client
(client/python), for bench/run_benchmarks.py's python_full and python_shm
ways: SC into a float32 array in Fortran order made and written before the
clock starts (what a risk process keeping SC in memory holds), through the
socket or, with --shared-memory, through the client's ring. Prints the
call's own seconds and CPU seconds (the way's CPU table counts the whole
process: its imports and the array's 4 GB of page faults too):
{"seconds": ..., "call_cpu_seconds": ...}."""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "client", "python"))
from pricer_client import Client, seed_preset  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--target", required=True)
parser.add_argument("--scenarios", type=int, required=True)
parser.add_argument("--shared-memory", action="store_true")
args = parser.parse_args()
example = seed_preset() | {"scenarios": args.scenarios}
sc = np.empty((example["paths"], args.scenarios), dtype=np.float32, order="F")
sc.fill(0)  # its pages faulted in before the clock (np.zeros would leave them to the call)
with Client(args.target) as client:
    client.devices()  # connected before the clock starts
    start, cpu = time.perf_counter(), os.times()
    # The mean, as the CLI's full-output ways ask for.
    client.price(full=sc, statistics=["mean"], shared_memory=args.shared_memory, **example)
    seconds, after = time.perf_counter() - start, os.times()
print(json.dumps({"seconds": seconds, "call_cpu_seconds": after.user + after.system -
                  cpu.user - cpu.system}))
