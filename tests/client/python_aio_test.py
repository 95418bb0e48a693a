"""pricer_client.aio against real pricerd servers: 8 requests priced
concurrently on one event loop, each equal to the blocking client's result
to the bit, and a split call whose server is killed mid-stream finishing on
the other server with the same bytes as an uninterrupted call."""

import asyncio
import os
import sys
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pricerd_fixture import WHOLE_BUDGET, Server  # noqa: E402  (the same fixture)
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

from pricer_client import Client, aio  # noqa: E402

ARGS = None


def assert_same_result(test, got, want):
    test.assertEqual((got.column_begin, got.column_end, got.paths, got.issuers),
                     (want.column_begin, want.column_end, want.paths, want.issuers))
    test.assertEqual(set(got.statistics), set(want.statistics))
    for name, values in want.statistics.items():
        test.assertEqual(got.statistics[name].tobytes(), values.tobytes(), name)
    for field in ("full", "terminal_prices"):
        a, b = getattr(got, field), getattr(want, field)
        test.assertEqual(a is None, b is None, field)
        if b is not None:
            test.assertEqual(np.asarray(a).tobytes("F"), np.asarray(b).tobytes("F"), field)


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


def devices(server):
    """A server's (jobs queued or running, shards done over its devices)."""
    with Client(server.target) as client:
        reply = client.devices()
    return reply.queued_jobs, sum(d.shards_done for d in reply.devices)


class ServerKilledMidStreamTest(unittest.TestCase):
    """aio price(split=2) over two servers, one killed with SIGKILL while its
    part streams: the part is asked again on the other for its missing
    columns only, and the result is the same bytes as an uninterrupted call."""

    # Several seconds on two cores in dozens of shards: a 24 MiB budget holds
    # shards of at most 768 of these columns.
    JOB = dict(issuers=4000, paths=500, seed=5, scenarios=24000, full=True,
               statistics=["mean", "var:0.99", "es:0.99"])

    def setUp(self):
        self.servers = [Server(ARGS.pricerd, device_memory="24MiB", flags=WHOLE_BUDGET)
                        for _ in range(2)]

    def tearDown(self):
        for server in self.servers:
            server.stop()

    async def kill_one_mid_part(self, call):
        """Kills the first server seen with some of its part done and not all."""
        baseline = [devices(server)[1] for server in self.servers]
        while not call.done():
            for server, before in zip(self.servers, baseline):
                queued, done = await asyncio.to_thread(devices, server)
                if queued > 0 and done > before:
                    server.proc.kill()
                    await asyncio.to_thread(server.proc.wait)
                    return server
            await asyncio.sleep(0.02)
        return None

    def test_split_call_finishes_on_the_other_server(self):
        with Client(self.servers[0].target) as one:
            whole = one.price(**self.JOB)

        async def split_call():
            target = "ipv4:" + ",".join(s.target for s in self.servers)
            async with aio.Client(target) as both:
                call = asyncio.ensure_future(both.price(**self.JOB, split=2))
                victim = await self.kill_one_mid_part(call)
                killed_mid_call = not call.done()
                return victim, killed_mid_call, await call

        with self.assertLogs("pricer_client.client", level="WARNING") as logs:
            victim, killed_mid_call, split = asyncio.run(split_call())
        self.assertIsNotNone(victim, "the call ended before a server was killed: size it up")
        self.assertTrue(killed_mid_call, "the call ended before the kill")
        self.assertTrue(any("retry 1 of 3" in line for line in logs.output), logs.output)
        assert_same_result(self, split, whole)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
