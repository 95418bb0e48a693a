#!/usr/bin/env python3
"""One price() of the original example's full SC by the Python client
(client/python), for bench/run_benchmarks.py's python_full and python_shm
ways: SC into a float32 array in Fortran order made and written before the
clock starts (what a risk process keeping SC in memory holds), through the
socket or, with --shared-memory, through the client's ring. Prints
{"seconds": ...} of the call alone."""
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
sc = np.zeros((example["paths"], args.scenarios), dtype=np.float32, order="F")
with Client(args.target) as client:
    client.devices()  # connected before the clock starts
    start = time.perf_counter()
    # The mean, as the CLI's full-output ways ask for.
    client.price(full=sc, statistics=["mean"], shared_memory=args.shared_memory, **example)
    seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds}))
