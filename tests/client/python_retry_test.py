"""price(split=2) over two servers, one of them killed with SIGKILL while its
part runs, in both Python clients: the retry asks the other server for the
missing columns only, and the result is the same bytes as an uninterrupted
call's."""

import asyncio
import os
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pricerd_fixture import WHOLE_BUDGET, Server  # noqa: E402  (the same fixture)
from python_clients import assert_same_result, devices  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)

from pricer_client import Client, aio  # noqa: E402

ARGS = None


class ServerKilledMidCallTest(unittest.TestCase):
    """price(split=2) over two servers, one of them killed with SIGKILL while
    its part runs: the part is asked again on the other for its missing
    columns only, and the result is the same bytes as an uninterrupted
    call's; with the blocking client taking SC through shared-memory rings
    (a new one for the retry), then the asyncio one through the socket."""

    # Several seconds on two cores in dozens of shards: a 24 MiB budget holds
    # shards of at most 768 of these columns.
    JOB = dict(issuers=4000, paths=500, seed=5, scenarios=24000, full=True,
               statistics=["mean", "var:0.99", "es:0.99"])

    def setUp(self):
        self.servers = [Server(ARGS.pricerd, device_memory="24MiB",
                               flags=WHOLE_BUDGET + ("--shared-memory-output",))
                        for _ in range(2)]

    def tearDown(self):
        for server in self.servers:
            server.stop()

    def test_split_call_finishes_on_the_other_server(self):
        with Client(self.servers[0].target) as one:
            whole = one.price(**self.JOB)
        baseline = [devices(server)[1] for server in self.servers]
        outcome = {}

        def call():
            try:
                with Client("ipv4:" + ",".join(s.target for s in self.servers)) as both:
                    outcome["result"] = both.price(**self.JOB, split=2, shared_memory=True)
            except Exception as error:  # reported below, on the test's thread
                outcome["error"] = error

        with self.assertLogs("pricer_client.client", level="WARNING") as logs:
            thread = threading.Thread(target=call)
            thread.start()
            # A server that has done some of its part and not all of it.
            victim = None
            while victim is None and thread.is_alive():
                for server, before in zip(self.servers, baseline):
                    queued, done = devices(server)
                    if queued > 0 and done > before:
                        victim = server
                        break
                time.sleep(0.02)
            self.assertIsNotNone(victim, "the call ended before a server was killed: size it up")
            victim.proc.kill()
            victim.proc.wait()
            self.assertTrue(thread.is_alive(), "the call ended before the kill")
            thread.join(timeout=scaled(300))
        self.assertNotIn("error", outcome)
        self.assertTrue(any("retry 1 of 3" in line for line in logs.output), logs.output)
        assert_same_result(self, outcome["result"], whole)
        survivor = self.servers[1] if victim is self.servers[0] else self.servers[0]
        self.assertGreater(survivor.metric("pricer_shared_memory_bytes_total"), 0)

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

    def test_aio_split_call_finishes_on_the_other_server(self):
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
