"""Limits that keep one small request or a stalled client from taking a real
pricerd's memory: the per-job cap (--max-job-bytes) and uploads that hold
memory only for the bytes that arrived, within --max-upload-bytes-in-flight."""

import threading
import time

import grpc

import pricerd_process
from pricer.v1 import pricer_pb2
from pricer_calls import CallReader, price, price_request
from pricerd_process import OperationsTestCase

GIB = 1 << 30


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for pid %d" % pid)


class StalledUpload:
    """An UploadScenarios call that declares `rows` x `columns`, sends 4 KiB
    of the values and then nothing until released."""

    def __init__(self, stub, rows, columns):
        self.release = threading.Event()
        self.future = stub.UploadScenarios.future(self._chunks(rows, columns), timeout=120)

    def _chunks(self, rows, columns):
        yield pricer_pb2.ScenarioChunk(rows=rows, columns=columns, values=b"\0" * 4096)
        self.release.wait(60)

    def code(self):
        try:
            self.future.result(timeout=60)
            return grpc.StatusCode.OK, ""
        except grpc.RpcError as error:
            return error.code(), error.details()


class JobCapTest(OperationsTestCase):
    # ST of 10,000 issuers x 10,000 paths is 400 MB: under the test server's
    # 1 GiB budget, over a quarter of it (the default cap).
    REQUEST = price_request(10_000, 10_000, 256)

    def test_the_default_cap_refuses_a_job_over_a_quarter_of_the_budget(self):
        server = self.start_server()
        refused = price(self.stub(server), self.REQUEST)
        self.assertCall(refused, grpc.StatusCode.RESOURCE_EXHAUSTED, r"--max-job-bytes",
                        r"one job may hold at most 268435456 bytes")

    def test_a_raised_cap_admits_the_same_job(self):
        server = self.start_server("--max-job-bytes", "1")
        reader = CallReader(self.stub(server).Price(self.REQUEST, timeout=120),
                            on_chunk=lambda c: None)
        reader.wait_accepted(self)
        reader.call.cancel()
        reader.finish(30)
        self.assertCall(reader, grpc.StatusCode.CANCELLED)


class UploadMemoryTest(OperationsTestCase):
    ROWS, COLUMNS = 1024, 524_288  # 2 GiB of float32 each

    def test_eight_stalled_uploads_of_2_gib_hold_almost_nothing(self):
        server = self.start_server("--max-upload-bytes-in-flight", "17GiB",
                                   "--scenario-store-bytes", "3GiB")
        stub = self.stub(server)
        time.sleep(0.5)
        before = rss_bytes(server.proc.pid)
        uploads = [StalledUpload(stub, self.ROWS, self.COLUMNS) for _ in range(8)]
        time.sleep(3)  # every first chunk has arrived and been taken
        grown = rss_bytes(server.proc.pid) - before
        # The ninth does not fit the budget: 8 x 2 GiB of 17 GiB are declared.
        ninth = StalledUpload(stub, self.ROWS, self.COLUMNS)
        code, details = ninth.code()
        for upload in uploads + [ninth]:
            upload.release.set()
        self.assertLess(grown, 64 << 20, "server RSS grew by %d bytes" % grown)
        self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED, details)
        self.assertIn("--max-upload-bytes-in-flight", details)
        for upload in uploads:  # released: each ends as a truncated upload
            self.assertEqual(upload.code()[0], grpc.StatusCode.INVALID_ARGUMENT)


if __name__ == "__main__":
    pricerd_process.main()
