"""price(shared_memory=True) in both Python clients against a real pricerd
started with --shared-memory-output: SC through the client's ring equals SC
through the socket bit for bit, into each kind of `full` and over a split
call, and the server counts the ring's bytes (so they did not come through
the socket); a server without the flag refuses, and wrong arguments are
refused before any call. (A server killed mid-call with a ring:
python_client_test.py.)"""

import asyncio
import os
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pricerd_fixture import Server  # noqa: E402  (the same fixture)
from python_clients import BlockingAioClient  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

import grpc  # noqa: E402
from pricer_client import Client, PricerError  # noqa: E402

ARGS = None
RING_BYTES = "pricer_shared_memory_bytes_total"

# 3,000 x 4,000 float32: 48 MB of SC, a dozen chunks of 4 MiB, more than
# the ring's 8 slots (32 MiB) hold at once, so the server waits for releases.
JOB = dict(issuers=40, paths=3000, seed=17, rate=0.01, scenarios=4000,
           statistics=["mean", "var:0.99"])


class SharedMemoryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.pricerd, flags=("--shared-memory-output",))
        cls.dir = tempfile.TemporaryDirectory()
        with Client(cls.server.target) as client:
            cls.socket = client.price(full=True, **JOB)
        cls.sc_bytes = cls.socket.full.nbytes

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.dir.cleanup()

    def assert_through_the_ring(self, price, full, calls=1):
        """price(full=full, shared_memory=True) gives the socket's SC and
        statistics, and the server counts `calls` x SC's bytes through rings."""
        before = self.server.metric(RING_BYTES)
        result = price(full=full, shared_memory=True)
        np.testing.assert_array_equal(result.full, self.socket.full)
        for name, values in self.socket.statistics.items():
            np.testing.assert_array_equal(result.statistics[name], values, err_msg=name)
        self.assertEqual(self.server.metric(RING_BYTES) - before, calls * self.sc_bytes)
        return result

    def test_the_ring_gives_the_socket_bits_in_both_clients(self):
        self.assertGreater(self.sc_bytes, 8 * (4 << 20))
        self.assertGreater(np.abs(self.socket.full).min(), 0)
        for make in (Client, BlockingAioClient):
            with make(self.server.target) as client:
                with self.subTest(client=make.__name__, full=True):
                    self.assert_through_the_ring(lambda **kw: client.price(**JOB, **kw), True)
                with self.subTest(client=make.__name__, full="array, split"):
                    array = np.zeros((JOB["paths"], JOB["scenarios"]), dtype=np.float32, order="F")
                    result = self.assert_through_the_ring(
                        lambda **kw: client.price(**JOB, split=3, **kw), array)
                    self.assertIs(result.full, array)
                with self.subTest(client=make.__name__, full="path"):
                    path = os.path.join(self.dir.name, make.__name__ + ".npy")
                    self.assert_through_the_ring(lambda **kw: client.price(**JOB, **kw), path)
                    np.testing.assert_array_equal(np.load(path), self.socket.full)

    def test_a_column_range_through_the_ring(self):
        # A range that starts mid-page: the chunks lie at their columns'
        # offsets modulo 4 KiB in their slots.
        with Client(self.server.target) as client:
            part = client.price(full=True, shared_memory=True, column_begin=333,
                                column_end=3501, **JOB)
        np.testing.assert_array_equal(part.full, self.socket.full[:, 333:3501])

    def test_a_server_without_the_flag_refuses_and_serves_on(self):
        plain = Server(ARGS.pricerd)
        try:
            with Client(plain.target) as client:
                with self.assertRaises(PricerError) as raised:
                    client.price(full=True, shared_memory=True, **JOB)
                self.assertEqual(raised.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
                self.assertIn("--shared-memory-output", str(raised.exception))
                result = client.price(full=True, **JOB)
                np.testing.assert_array_equal(result.full, self.socket.full)
        finally:
            plain.stop()

    def test_wrong_arguments_are_refused_before_any_call(self):
        before = self.server.metric("pricer_calls_total")
        with Client(self.server.target) as client:
            with self.assertRaisesRegex(ValueError, "shared_memory needs full"):
                client.price(shared_memory=True, **JOB)
            with self.assertRaisesRegex(TypeError, "shared_memory must be True or False"):
                client.price(full=True, shared_memory="yes", **JOB)

            async def aio_call():
                from pricer_client import aio
                async with aio.Client(self.server.target) as a:
                    await a.price(shared_memory=True, **JOB)

            with self.assertRaisesRegex(ValueError, "shared_memory needs full"):
                asyncio.run(aio_call())
        self.assertEqual(self.server.metric("pricer_calls_total"), before)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
