"""Per-client fairness and quotas: a small client served next to a busy
one, the jobs and pending flops per client, and the priorities a client
may ask for."""

import time

import grpc

from pricer_client._proto import pricer_pb2

import pricerd_process
from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process
from pricer_calls import OK, CallReader, long_request, price, price_request, small_request
from pricerd_process import OperationsTestCase, bearer, write_tokens


class FairnessTest(OperationsTestCase):
    def start_with_tokens(self, *flags):
        tokens_file, tokens = write_tokens(self.directory())
        server = self.start_server("--auth-tokens-file", tokens_file, *flags)
        return server, {name: bearer(token) for name, token in tokens.items()}

    def start_jobs(self, stub, metadata, count, request):
        """`count` concurrent Price calls, each read on its own thread; waits
        until each is accepted and cancels them all at cleanup."""
        readers = [CallReader(stub.Price(request, metadata=metadata, timeout=scaled(300)),
                              on_chunk=lambda chunk: None) for _ in range(count)]
        self.addCleanup(lambda: [r.call.cancel() for r in readers])
        for reader in readers:
            reader.wait_accepted(self)
        return readers

    def cancel_and_wait_idle(self, stub, metadata, readers):
        for reader in readers:
            reader.call.cancel()
        for reader in readers:
            reader.finish(30)
            self.assertEqual(reader.code, grpc.StatusCode.CANCELLED, reader.details)
        deadline = time.time() + scaled(20)
        while stub.ListDevices(pricer_pb2.ListDevicesRequest(), metadata=metadata,
                               timeout=10).queued_jobs != 0:
            self.assertLess(time.time(), deadline, "cancelled jobs still queued")
            time.sleep(0.1)

    def test_a_small_client_is_served_next_to_a_busy_one(self):
        server, auth = self.start_with_tokens("--max-queued-jobs", "256",
                                              "--max-jobs-per-client", "64")
        stub_a, stub_b = self.stub(server), self.stub(server)
        stub_b.ListDevices(pricer_pb2.ListDevicesRequest(), metadata=auth["bob"], timeout=10)
        # 119 shards of 8448 columns, ~60 ms of one core each: ~4 s per job
        # alone. Taking turns by job, bob's one shard would wait for up to 63
        # of them (~2 s on two cores); by client, for one. A slow machine
        # stretches both alike: the bound between them, 0.5 s, is scaled.
        a_jobs = self.start_jobs(stub_a, auth["alice"], 63, price_request(100, 2000, 1_000_000))
        self.assertGreaterEqual(a_jobs[0].accepted.plan.shard_count, 100)
        time.sleep(0.3)
        # Three in a row, so that a lucky turn of a job round robin cannot pass.
        for attempt in range(3):
            started = time.time()
            b = price(stub_b, small_request(seed=attempt + 1), metadata=auth["bob"], timeout=60)
            seconds = time.time() - started
            self.assertCall(b, OK)
            self.assertEqual(len(b.finished()), 1)
            self.assertEqual([r.code for r in a_jobs], [None] * 63, "A's jobs ended first")
            self.assertLess(seconds, scaled(0.5),
                            "bob's job %d of one shard next to alice's 63" % attempt)
        self.cancel_and_wait_idle(stub_a, auth["alice"], a_jobs)

    def test_jobs_per_client_quota(self):
        # --max-jobs-per-client 2, and the default max-queued-jobs / 4 = 2.
        for flags in (("--max-jobs-per-client", "2"), ("--max-queued-jobs", "8")):
            with self.subTest(flags=flags):
                server, auth = self.start_with_tokens(*flags)
                stub = self.stub(server)
                a_jobs = self.start_jobs(stub, auth["alice"], 2, long_request())
                third = price(stub, long_request(), metadata=auth["alice"])
                self.assertCall(third, grpc.StatusCode.RESOURCE_EXHAUSTED, r"alice", r"\b2\b")
                self.assertCall(price(stub, small_request(), metadata=auth["bob"]), OK)
                self.cancel_and_wait_idle(stub, auth["alice"], a_jobs)
                # The quota is free again.
                self.assertCall(price(stub, small_request(), metadata=auth["alice"]), OK)
                server.stop()

    def test_pending_flops_per_client(self):
        server, auth = self.start_with_tokens("--max-pending-flops-per-client", "1e12")
        stub = self.stub(server)
        over = price_request(100, 10_000, 1_000_000)  # 2e12 flops
        self.assertCall(price(stub, over, metadata=auth["alice"]),
                        grpc.StatusCode.RESOURCE_EXHAUSTED, r"alice")
        half = price_request(8, 2000, 18_750_000)  # 6e11 flops, ~10 s of work
        a_jobs = self.start_jobs(stub, auth["alice"], 1, half)
        self.assertCall(price(stub, half, metadata=auth["alice"]),
                        grpc.StatusCode.RESOURCE_EXHAUSTED, r"alice")
        # Another client's budget is its own.
        b_jobs = self.start_jobs(stub, auth["bob"], 1, half)
        self.cancel_and_wait_idle(stub, auth["alice"], a_jobs + b_jobs)

    def test_priority_limits(self):
        server, auth = self.start_with_tokens()
        stub = self.stub(server)
        self.assertCall(price(stub, small_request(priority=5), metadata=auth["alice"]),
                        grpc.StatusCode.PERMISSION_DENIED, r"\b5\b", r"\b0\b")
        self.assertCall(price(stub, small_request(priority=5), metadata=auth["bob"]), OK)
        self.assertCall(price(stub, small_request(priority=11), metadata=auth["bob"]),
                        grpc.StatusCode.PERMISSION_DENIED, r"\b11\b", r"\b10\b")
        self.assertCall(price(stub, small_request(priority=-5), metadata=auth["alice"]), OK)

    def test_priority_without_tokens(self):
        stub = self.stub(self.start_server())
        self.assertCall(price(stub, small_request(priority=5)),
                        grpc.StatusCode.PERMISSION_DENIED, r"\b5\b", r"\b0\b")
        self.assertCall(price(stub, small_request(priority=0)), OK)
        self.assertCall(price(stub, small_request(priority=-5)), OK)


if __name__ == "__main__":
    pricerd_process.main()
