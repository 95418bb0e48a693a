"""Signals and the graceful drain: a running call completes with every
column while new calls and health say draining, --drain-seconds cuts a long
call, a second signal exits at once, and SIGHUP reloads nothing."""

import signal
import time

import grpc
import numpy as np

from pricer_client._proto import pricer_pb2, pricer_pb2_grpc

import pricerd_process
from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process
from pricer_calls import OK, CallReader, call_status, long_request, price, price_request, \
    small_request
from pricerd_process import CRASH_CODES, OperationsTestCase
from standard_services import NOT_SERVING, SERVING, health_check, health_watch


class DrainTest(OperationsTestCase):
    # Full output, about 2 s of work on two cores: 7 shards of 4352 columns.
    ISSUERS, PATHS, COLUMNS = 500, 4000, 30_000

    def test_running_call_completes_during_drain(self):
        request = price_request(self.ISSUERS, self.PATHS, self.COLUMNS, seed=7, full=True,
                                mean=False)
        # The reference: the same request on a fresh server, column by column.
        reference_server = self.start_server()
        reference = np.zeros((self.COLUMNS, self.PATHS), dtype="<f4")

        def keep(chunk):
            reference[chunk.column_begin:chunk.column_end] = np.frombuffer(
                chunk.values, dtype="<f4").reshape(-1, self.PATHS)

        call = CallReader(self.stub(reference_server).Price(request, timeout=scaled(120)),
                          on_chunk=keep)
        self.assertCall(call.finish(), OK)
        reference_server.stop()

        server = self.start_server()
        channel = self.channel(server.target)
        stub = pricer_pb2_grpc.PricerStub(channel)
        watch = health_watch(channel, "")
        self.assertEqual(next(watch), SERVING)
        delivered = np.zeros(self.COLUMNS, dtype=np.int64)
        mismatched = []

        def check(chunk):
            got = np.frombuffer(chunk.values, dtype="<u4").reshape(-1, self.PATHS)
            want = reference[chunk.column_begin:chunk.column_end].view("<u4")
            if got.shape != want.shape or not np.array_equal(got, want):
                mismatched.append((chunk.column_begin, chunk.column_end))
            delivered[chunk.column_begin:chunk.column_end] += 1

        reader = CallReader(stub.Price(request, timeout=scaled(120)), on_chunk=check)
        reader.wait_accepted(self)
        time.sleep(0.5)
        server.signal(signal.SIGTERM)
        signalled = time.time()

        self.assertEqual(next(watch), NOT_SERVING)
        watch.cancel()
        for service in ("", "pricer.v1.Pricer"):
            self.assertEqual(health_check(channel, service), (OK, NOT_SERVING), service)
        refused = price(stub, small_request(), timeout=10)
        self.assertCall(refused, grpc.StatusCode.UNAVAILABLE, r"(?i)draining")
        code, details, _ = call_status(
            stub.UploadScenarios,
            iter([pricer_pb2.ScenarioChunk(rows=1, columns=1, values=b"\0\0\0\0")]), timeout=10)
        self.assertEqual(code, grpc.StatusCode.UNAVAILABLE, details)
        self.assertRegex(details, r"(?i)draining")
        self.assertIsNone(reader.ended_at, "the call ended before the checks of the drain")

        reader.finish(60)
        self.assertCall(reader, OK)
        self.assertEqual(mismatched, [])
        self.assertEqual(np.unique(delivered).tolist(), [1], "every column exactly once")
        self.assertEqual(reader.replies[-1].WhichOneof("kind"), "finished")
        self.assertEqual(server.proc.wait(timeout=scaled(30)), 0, server.output()[-4000:])
        self.assertLess(time.time() - signalled, scaled(30))

    def test_drain_seconds_cut_a_long_call(self):
        server = self.start_server("--drain-seconds", "1")
        reader = CallReader(self.stub(server).Price(long_request(), timeout=scaled(120)),
                            on_chunk=lambda chunk: None)
        reader.wait_accepted(self)
        time.sleep(0.5)
        server.signal(signal.SIGINT)
        signalled = time.time()
        code = server.proc.wait(timeout=scaled(15))
        exited = time.time() - signalled
        self.assertEqual(code, 0, server.output()[-4000:])
        self.assertLess(exited, 1 + scaled(3))  # --drain-seconds and a margin to exit
        reader.finish(10)
        self.assertCall(reader, grpc.StatusCode.UNAVAILABLE)
        # The job ran on through the drain, and was cut only at its end.
        self.assertGreater(sum(t > signalled + 0.3 for t in reader.chunk_times), 0)
        self.assertGreater(reader.ended_at - signalled, 0.9)

    def test_second_signal_exits_at_once(self):
        server = self.start_server()
        reader = CallReader(self.stub(server).Price(long_request(), timeout=scaled(120)),
                            on_chunk=lambda chunk: None)
        reader.wait_accepted(self)
        server.signal(signal.SIGTERM)
        time.sleep(0.5)
        self.assertIsNone(server.proc.poll(), "pricerd should still be draining")
        server.signal(signal.SIGTERM)
        signalled = time.time()
        code = server.proc.wait(timeout=scaled(10))
        self.assertLess(time.time() - signalled, scaled(3))  # not the drain's 30 s
        self.assertNotEqual(code, 0)
        self.assertNotIn(code, CRASH_CODES, server.output()[-4000:])
        reader.finish(30)
        self.assertNotEqual(reader.code, OK)


    def test_sighup_reloads_nothing_and_keeps_serving(self):
        server = self.start_server()
        server.signal(signal.SIGHUP)
        deadline = time.time() + scaled(10)
        while "SIGHUP: nothing is reloaded" not in server.output():
            self.assertLess(time.time(), deadline, server.output()[-2000:])
            time.sleep(0.05)
        self.assertIsNone(server.proc.poll())
        self.assertEqual(health_check(self.channel(server.target), "pricer.v1.Pricer"),
                         (OK, SERVING))
        self.assertCall(price(self.stub(server), small_request()), OK)


if __name__ == "__main__":
    pricerd_process.main()
