"""Full output through a client's shared-memory ring (output.shared_memory,
--shared-memory-output) on a real pricerd: the values equal the replies' bit
for bit, the server waits for the client to release a slot before it writes
it again, a client that never releases is cancelled after
--stalled-reader-seconds, and every ring that is not what the request says is
refused naming its field, the server serving on. The CLI's --shared-memory
writes the same .npy as the socket."""

import fcntl
import mmap
import os
import queue
import secrets
import struct
import subprocess
import tempfile
import threading
import time

import grpc
import numpy as np

import pricerd_process
from pricer_client._proto import client_protocol_pb2
from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process
from metrics_scrape import Samples, scrape
from pricer_calls import price, price_request
from pricerd_process import OperationsTestCase

LAYOUT = client_protocol_pb2.SharedRingLayout()  # what the server checks a ring against
HEADER = LAYOUT.header_bytes  # 4096
SLOT = LAYOUT.min_slot_bytes  # 4 MiB
RELEASED = LAYOUT.released_offset  # the uint32 the client counts its releases in


class Ring:
    """A ring as the protocol describes it: a memfd sealed against
    shrinking, the magic and a random token in its header."""

    def __init__(self, slots, slot_bytes=SLOT, seal=True, size=None, magic=LAYOUT.magic, phase=0):
        self.slots, self.slot_bytes, self.phase = slots, slot_bytes, phase
        self.fd = os.memfd_create("test-ring", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        size = size if size is not None else HEADER + slots * slot_bytes
        os.ftruncate(self.fd, size)
        if seal:
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        self.map = mmap.mmap(self.fd, size)
        self.token = secrets.token_bytes(16)
        self.map[0:8] = magic
        self.map[8:24] = self.token
        self.released = 0

    def describe(self, request, token=None):
        ring = request.output.shared_memory
        ring.pid, ring.fd, ring.slots, ring.slot_bytes, ring.phase = (
            os.getpid(), self.fd, self.slots, self.slot_bytes, self.phase)
        ring.token = token if token is not None else self.token
        return request

    def values(self, chunk):
        """The chunk's values, copied out of its slot, where the phase puts them."""
        start = (HEADER + (chunk.shared_slot - 1) * self.slot_bytes +
                 (self.phase + 4 * chunk.rows * chunk.column_begin) % LAYOUT.slot_alignment)
        size = 4 * chunk.rows * (chunk.column_end - chunk.column_begin)
        return bytes(self.map[start:start + size])

    def release(self):
        self.released += 1
        struct.pack_into("<I", self.map, RELEASED, self.released)

    def close(self):
        self.map.close()
        os.close(self.fd)


def full_request(columns=3000):
    """SC of 2,000 paths x `columns`: about 5 chunks per 3,000 columns."""
    return price_request(8, 2000, columns, full=True, mean=False)


class SharedMemoryTest(OperationsTestCase):

    def ring(self, *args, **kwargs):
        ring = Ring(*args, **kwargs)
        self.addCleanup(ring.close)
        return ring

    def socket_values(self, stub, request):
        reader = price(stub, request)
        self.assertCall(reader, grpc.StatusCode.OK)
        return {r.chunk.column_begin: r.chunk.values for r in reader.replies
                if r.WhichOneof("kind") == "chunk"}

    def test_values_through_a_small_ring_equal_the_replies_and_wait_for_releases(self):
        server = self.start_server("--shared-memory-output")
        stub = self.stub(server)
        expected = self.socket_values(stub, full_request())
        ring = self.ring(2, phase=1000)
        replies = iter(stub.Price(ring.describe(full_request()), timeout=scaled(120)))
        self.assertEqual(next(replies).WhichOneof("kind"), "accepted")
        chunks = [next(replies).chunk, next(replies).chunk]
        self.assertEqual([c.shared_slot for c in chunks], [1, 2])
        self.assertEqual([c.values for c in chunks], [b"", b""])
        # Both slots held: the third chunk waits for a release.
        later = queue.Queue()
        threading.Thread(target=lambda: later.put(next(replies)), daemon=True).start()
        with self.assertRaises(queue.Empty):
            later.get(timeout=1.0)
        got = {chunks[0].column_begin: ring.values(chunks[0])}
        ring.release()
        chunks.append(later.get(timeout=scaled(30)).chunk)
        self.assertEqual(chunks[2].shared_slot, 1)  # slot 0 again
        for chunk in chunks[1:]:
            got[chunk.column_begin] = ring.values(chunk)
            ring.release()
        finished = None
        for reply in replies:
            if reply.WhichOneof("kind") == "chunk":
                self.assertEqual(reply.chunk.values, b"")
                self.assertEqual(reply.chunk.shared_slot, ring.released % 2 + 1)
                got[reply.chunk.column_begin] = ring.values(reply.chunk)
                ring.release()
            elif reply.WhichOneof("kind") == "finished":
                finished = reply.finished
        self.assertIsNotNone(finished)
        sc_bytes = sum(len(v) for v in expected.values())
        self.assertEqual(finished.bytes, sc_bytes)
        self.assertGreater(len(expected), 3)
        self.assertEqual(got, expected)
        # The ring's bytes are counted apart from the replies' (whose
        # values went through the socket in the first call only).
        samples = Samples(scrape(server))
        self.assertEqual(samples.total("pricer_shared_memory_bytes_total"), sc_bytes)
        self.assertLess(samples.total("pricer_streamed_bytes_total"), 1.01 * sc_bytes)

    def test_a_client_that_never_releases_is_cancelled_and_the_server_serves_on(self):
        server = self.start_server("--shared-memory-output", "--stalled-reader-seconds",
                                   str(scaled(1)))
        stub = self.stub(server)
        ring = self.ring(1)
        kinds = []
        with self.assertRaises(grpc.RpcError) as raised:
            for reply in stub.Price(ring.describe(full_request()), timeout=scaled(60)):
                kinds.append(reply.WhichOneof("kind"))
        self.assertEqual(raised.exception.code(), grpc.StatusCode.CANCELLED)
        self.assertEqual(kinds, ["accepted", "chunk"])
        self.assertRegex(server.output(), r"cancelled: the reader took no reply")
        self.assertCall(price(stub, price_request(4, 1000, 100)), grpc.StatusCode.OK)

    def refused(self, stub, request):
        try:
            for _ in stub.Price(request, timeout=scaled(60)):
                pass
        except grpc.RpcError as error:
            field = dict(error.trailing_metadata() or ()).get("pricer-field")
            return error.code(), field, error.details()
        self.fail("the request was not refused")

    def test_a_server_without_the_flag_refuses_a_ring(self):
        server = self.start_server()
        code, field, details = self.refused(self.stub(server), self.ring(1).describe(full_request()))
        self.assertEqual((code, field), (grpc.StatusCode.FAILED_PRECONDITION, "output.shared_memory"))
        self.assertIn("--shared-memory-output", details)

    def test_rings_that_are_not_what_the_request_says_are_refused_naming_the_field(self):
        server = self.start_server("--shared-memory-output")
        stub = self.stub(server)
        good = self.ring(1)
        with tempfile.TemporaryFile() as plain:
            os.ftruncate(plain.fileno(), HEADER + SLOT)
            wrong = good.describe(full_request())
            wrong.output.shared_memory.fd = plain.fileno()
            cases = [
                ("not full", good.describe(price_request(8, 2000, 100)), "output.shared_memory",
                 "needs output.full"),
                ("no slots", self.with_ring(good, slots=0), "output.shared_memory.slots",
                 r"is 0: must be in \[1, 1024\]"),
                ("small slots", self.with_ring(good, slot_bytes=4096),
                 "output.shared_memory.slot_bytes", "multiple of 4096"),
                ("phase", self.with_ring(good, phase=4096), "output.shared_memory.phase",
                 r"is 4096: must be in \[0, 4095\]"),
                ("short token", good.describe(full_request(), token=b"x"),
                 "output.shared_memory.token", "16 bytes"),
                ("other token", good.describe(full_request(), token=bytes(16)),
                 "output.shared_memory.token", "not the one in the header"),
                ("no such fd", self.with_ring(good, fd=100000), "output.shared_memory.fd",
                 "cannot be found"),
                ("not a memfd", wrong, "output.shared_memory.fd", "not a memfd sealed"),
                ("unsealed", self.ring(1, seal=False).describe(full_request()),
                 "output.shared_memory.fd", "not a memfd sealed"),
                ("too small", self.ring(2, size=HEADER + SLOT).describe(full_request()),
                 "output.shared_memory.fd", "fewer than the %d" % (HEADER + 2 * SLOT)),
                ("no magic", self.ring(1, magic=b"XXXXXXXX").describe(full_request()),
                 "output.shared_memory.token", "not the one in the header"),
            ]
            for name, request, want_field, message in cases:
                with self.subTest(name):
                    code, field, details = self.refused(stub, request)
                    self.assertEqual((code, field), (grpc.StatusCode.INVALID_ARGUMENT, want_field))
                    self.assertRegex(details, message)
        self.assertCall(price(stub, price_request(4, 1000, 100)), grpc.StatusCode.OK)

    @staticmethod
    def with_ring(ring, **fields):
        request = ring.describe(full_request())
        for name, value in fields.items():
            setattr(request.output.shared_memory, name, value)
        return request

    def run_cli(self, *args):
        return subprocess.run([pricerd_process.ARGS.pricer, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=scaled(300))

    def test_the_cli_writes_the_same_npy_through_shared_memory(self):
        server = self.start_server("--shared-memory-output")
        folder = self.directory()
        common = ["--target", server.target, "price", "--issuers", "20", "--paths", "3000",
                  "--scenarios", "2500", "--stats", "mean"]
        paths = [os.path.join(folder, name) for name in ("socket.npy", "ring.npy")]
        for path, extra in zip(paths, ([], ["--shared-memory"])):
            run = self.run_cli(*common, "--full-out", path, *extra)
            self.assertEqual(run.returncode, 0, run.stdout)
        socket, ring = (np.load(path) for path in paths)
        self.assertEqual(socket.shape, (3000, 2500))
        self.assertTrue(np.array_equal(socket.view(np.uint32), ring.view(np.uint32)))

    def test_the_cli_refuses_shared_memory_it_cannot_use(self):
        plain = self.start_server()
        run = self.run_cli("--target", plain.target, "price", "--issuers", "4", "--paths", "100",
                           "--scenarios", "10", "--shared-memory")
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("--shared-memory needs --full-out", run.stdout)
        out = os.path.join(self.directory(), "sc.npy")
        run = self.run_cli("--target", plain.target, "price", "--issuers", "4", "--paths", "100",
                           "--scenarios", "10", "--full-out", out, "--shared-memory")
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("FAILED_PRECONDITION", run.stdout)
        self.assertIn("--shared-memory-output", run.stdout)


if __name__ == "__main__":
    pricerd_process.main()
