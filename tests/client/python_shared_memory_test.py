"""price(shared_memory=True) in both Python clients against a real pricerd
started with --shared-memory-output: SC through the client's ring equals SC
through the socket bit for bit, into each kind of `full` and over a split
call, and the server counts the ring's bytes (so they did not come through
the socket); a server without the flag refuses, and wrong arguments (and a
processor other than x86-64) are refused before any call. A scripted server in this process that writes into
the ring and names the wrong slot, or values that do not fit one, or a slot
when no ring was asked for, is a contradiction. (A server killed mid-call
with a ring: python_retry_test.py.)"""

import asyncio
import mmap
import os
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pricerd_fixture import Server  # noqa: E402  (the same fixture)
from python_clients import BlockingAioClient, serve_in_process  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

import grpc  # noqa: E402
from pricer_client import Client, PricerError, _ring  # noqa: E402
from pricer_client._proto import pricer_pb2, pricer_pb2_grpc  # noqa: E402

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
        self.assertGreater(self.sc_bytes, _ring.SLOTS * _ring.SLOT_BYTES)
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
            # A processor that may reorder the release before the slot's reads.
            with mock.patch("platform.machine", return_value="aarch64"), \
                    self.assertRaisesRegex(ValueError, "x86-64, not linux on aarch64"):
                client.price(full=True, shared_memory=True, **JOB)

            async def aio_call():
                from pricer_client import aio
                async with aio.Client(self.server.target) as a:
                    await a.price(shared_memory=True, **JOB)

            with self.assertRaisesRegex(ValueError, "shared_memory needs full"):
                asyncio.run(aio_call())
        self.assertEqual(self.server.metric("pricer_calls_total"), before)


class RingWriter(pricer_pb2_grpc.PricerServicer):
    """Answers a request of 1 column of 1,000 rows as a server with
    --shared-memory-output would, through the request's ring (mapped from
    /proc/self/fd: the client is this process), then a chunk that
    `spoil(chunk)` may change; `slot`: the ring's slot it names."""

    def __init__(self):
        self.spoil, self.slot = None, 1

    def Price(self, request, context):
        ring = request.output.shared_memory
        yield pricer_pb2.PriceReply(accepted=pricer_pb2.JobAccepted(
            issuers=1, paths=1000, column_begin=0, column_end=1))
        chunk = pricer_pb2.ResultChunk(column_begin=0, column_end=1, rows=1000)
        if ring.slots:
            with open(f"/proc/self/fd/{ring.fd}", "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
                start = _ring.HEADER_BYTES + (self.slot - 1) * ring.slot_bytes
                m[start:start + 4000] = np.arange(1000, dtype="<f4").tobytes()
            chunk.shared_slot = self.slot
        else:
            chunk.values = np.arange(1000, dtype="<f4").tobytes()
        yield pricer_pb2.PriceReply(chunk=self.spoil(chunk) if self.spoil else chunk)
        yield pricer_pb2.PriceReply(finished=pricer_pb2.JobFinished(elapsed_seconds=0.1))


class RingContradictionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.writer = RingWriter()
        cls.server, cls.target = serve_in_process(cls.writer)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop(None)

    def setUp(self):
        self.writer.spoil, self.writer.slot = None, 1

    def price(self, make, shared_memory=True):
        with make(self.target) as client:
            return client.price(issuers=1, paths=1000, scenarios=1, full=True,
                                statistics=None, shared_memory=shared_memory)

    def refused(self, make, pattern, shared_memory=True):
        with self.assertRaisesRegex(PricerError, pattern) as raised:
            self.price(make, shared_memory)
        self.assertEqual(raised.exception.code, grpc.StatusCode.INTERNAL)

    def test_the_scripted_ring_works(self):
        for make in (Client, BlockingAioClient):
            full = self.price(make).full
            np.testing.assert_array_equal(full[:, 0], np.arange(1000, dtype=np.float32))

    def test_a_slot_out_of_turn(self):
        self.writer.slot = 2
        for make in (Client, BlockingAioClient):
            self.refused(make, "a chunk in shared-memory slot 1 where slot 0 was next")

    def test_values_larger_than_a_slot(self):
        def too_long(chunk):
            chunk.rows = _ring.SLOT_BYTES // 4 + 1
            return chunk

        self.writer.spoil = too_long
        for make in (Client, BlockingAioClient):
            self.refused(make, "a chunk of 1 columns of 1048577 rows in a shared-memory slot")

    def test_a_slot_when_no_ring_was_asked_for(self):
        def in_a_slot(chunk):
            chunk.shared_slot, chunk.values = 1, b""
            return chunk

        self.writer.spoil = in_a_slot
        for make in (Client, BlockingAioClient):
            self.refused(make, "no ring was asked for", shared_memory=False)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
