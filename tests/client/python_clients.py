"""What the tests of the Python clients share: the asyncio client behind a
blocking facade, the comparison of two results to the bit, a server's
queue and shards done, and a scripted Pricer served in the test's process."""

import asyncio
from concurrent import futures

import grpc
import numpy as np

from pricer_client import Client, aio
from pricer_client._proto import pricer_pb2_grpc


def assert_same_result(test, got, want):
    """Two PriceResults with the same range, shape and bytes."""
    test.assertEqual((got.column_begin, got.column_end, got.paths, got.issuers),
                     (want.column_begin, want.column_end, want.paths, want.issuers))
    test.assertEqual(set(got.statistics), set(want.statistics))
    for name, values in want.statistics.items():
        test.assertEqual(got.statistics[name].tobytes(), values.tobytes(), name)
    test.assertEqual(set(got.contributions), set(want.contributions))
    for name, values in want.contributions.items():
        test.assertEqual(got.contributions[name].tobytes("F"), values.tobytes("F"), name)
    test.assertEqual(set(got.sensitivities), set(want.sensitivities))
    for name, parts in want.sensitivities.items():
        test.assertEqual(set(got.sensitivities[name]), set(parts), name)
        for part, values in parts.items():
            test.assertEqual(got.sensitivities[name][part].tobytes("F"), values.tobytes("F"),
                             f"{name} {part}")
    for field in ("full", "terminal_prices", "column_paths", "target_met"):
        a, b = getattr(got, field), getattr(want, field)
        test.assertEqual(a is None, b is None, field)
        if b is not None:
            test.assertEqual(np.asarray(a).tobytes("F"), np.asarray(b).tobytes("F"), field)


class BlockingAioClient:
    """pricer_client.aio.Client driven from blocking test code, so that a
    test of the blocking client runs unchanged on the asyncio one: each
    method call runs its coroutine to the end on the client's own loop."""

    def __init__(self, *args, **kwargs):
        self._loop = asyncio.new_event_loop()

        async def make():  # grpc.aio channels belong to the loop they are made on
            return aio.Client(*args, **kwargs)

        try:
            self._client = self._loop.run_until_complete(make())
        except BaseException:
            self._loop.close()
            raise

    def __getattr__(self, name):
        method = getattr(self._client, name)
        if not asyncio.iscoroutinefunction(method):
            return method
        return lambda *args, **kwargs: self._loop.run_until_complete(method(*args, **kwargs))

    def close(self):
        self._loop.run_until_complete(self._client.close())
        self._loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def devices(server):
    """A server's (jobs queued or running, shards done over its devices)."""
    with Client(server.target) as client:
        reply = client.devices()
    return reply.queued_jobs, sum(d.shards_done for d in reply.devices)


def serve_in_process(servicer):
    """A gRPC server of `servicer` (a PricerServicer) on 127.0.0.1, a free
    port: (the started server, its target)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pricer_pb2_grpc.add_PricerServicer_to_server(servicer, server)
    target = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    return server, target
