"""pricer_client.aio against a real pricerd: 8 requests priced concurrently
on one event loop, each equal to the blocking client's result to the bit.
(A server killed mid-stream: python_retry_test.py, for both clients.)"""

import asyncio
import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pricerd_fixture import Server  # noqa: E402  (the same fixture)
from python_clients import assert_same_result  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

from pricer_client import Client, aio  # noqa: E402

ARGS = None


# Eight different requests (models, statistics, full SC, ST, a column range),
# each of 2-8 GFLOP, so that all of them are in the server at once.
REQUESTS = [
    dict(issuers=100, paths=10000, seed=s, rate=0.01 * s, scenarios=4000,
         statistics=["mean", "stddev", "var:0.99", "es:0.975"]) for s in range(4)
] + [
    dict(issuers=50, paths=5000, seed=11, scenarios=4000, full=True, statistics=None),
    dict(issuers=100, paths=10000, seed=12, scenarios=3000, terminal_prices=True,
         statistics=["min", "max", "quantile:0.5"]),
    dict(issuers=100, paths=10000, seed=13, scenarios=5000, column_begin=1000, column_end=4000,
         antithetic=True, statistics=["mean", "var:.99"]),
    dict(spot=[5.0, 7.5, 9.0], volatility=[0.2, 0.3, 0.4], paths=200000, seed=14,
         correlation=[[1, 0.5, 0.2], [0.5, 1, 0.1], [0.2, 0.1, 1]],
         scenarios=np.arange(3 * 1500, dtype=np.float64).reshape(3, 1500) % 7,
         statistics=["mean", "es:0.99"]),
]


class ConcurrentRequestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.pricerd)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_eight_requests_on_one_loop_equal_the_blocking_client(self):
        with Client(self.server.target) as blocking:
            want = [blocking.price(**request) for request in REQUESTS]
        progress = [[] for _ in REQUESTS]

        async def price_all():
            async with aio.Client(self.server.target) as client:
                calls = [asyncio.ensure_future(client.price(
                    **request, progress=lambda done, total, k=k: progress[k].append(done)))
                    for k, request in enumerate(REQUESTS)]
                # The server's jobs admitted and not finished, polled on the
                # same loop while the calls run: all eight at once.
                most = 0
                while not all(call.done() for call in calls):
                    most = max(most, (await client.devices()).queued_jobs)
                    await asyncio.sleep(0.002)
                return most, await asyncio.gather(*calls)

        most, got = asyncio.run(price_all())
        for k, (g, w) in enumerate(zip(got, want)):
            with self.subTest(request=k):
                assert_same_result(self, g, w)
                columns = g.column_end - g.column_begin
                self.assertEqual(progress[k][-1] if progress[k] else None, columns)
        self.assertEqual(most, len(REQUESTS), "the calls did not run at the same time")


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
