"""Faults of the clients of a real pricerd (docs/reliability.md): a client
process killed mid-stream, a reader that stops reading, 1,000 calls
cancelled at random points, and five slow readers of large full-output
streams. Each test prints its figures and asserts its bound.

    PYTHONPATH=client/python python3 \\
        tests/reliability/process_faults_test.py --pricerd build-move/server/pricerd \\
        --pricer build-move/client/pricer"""

import collections
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_clients as soak  # noqa: E402  (puts tests/service on sys.path)
import pricerd_process  # noqa: E402
from pricer_client._proto import pricer_pb2, pricer_pb2_grpc  # noqa: E402
from pricer_calls import OK, CallReader, price_request  # noqa: E402
from binaries import scaled  # noqa: E402  (tests/binaries.py, on sys.path through pricerd_process)
from pricer_client import Client  # noqa: E402

MIB = 1 << 20
CANCELLED = grpc.StatusCode.CANCELLED

# A client process: prices the PriceRequest it reads on stdin with full
# output, says "streaming" once three chunks have arrived and reads on.
STREAMING_CLIENT = r"""
import sys, grpc
from pricer_client._proto import pricer_pb2, pricer_pb2_grpc
request = pricer_pb2.PriceRequest.FromString(sys.stdin.buffer.read())
stub = pricer_pb2_grpc.PricerStub(grpc.insecure_channel(sys.argv[1]))
chunks = 0
for reply in stub.Price(request, timeout=300):
    chunks += reply.WhichOneof("kind") == "chunk"
    if chunks == 3:
        print("streaming", flush=True)
"""


def list_devices(stub):
    return stub.ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10)


def market(n):
    return dict(spot=[5.0 + 5.0 * i / n for i in range(n)],
                volatility=[0.1 + 0.4 * i / n for i in range(n)])


class FaultsTestCase(pricerd_process.OperationsTestCase):
    def server(self, *flags, devices="cpu:2", env=None):
        """pricerd with two cpu devices of 1 GiB (unless `devices`)."""
        server = pricerd_process.Server(flags, env=env, devices=devices)
        self.addCleanup(server.stop)
        return server

    def assertIdle(self, stub, timeout=20):
        """Nothing queued, nothing pending, no byte on any device, within
        `timeout` seconds (scaled); the seconds it took."""
        start = time.monotonic()
        reply = soak.wait_until_idle(stub, timeout)
        soak.check_devices(reply)
        self.assertTrue(reply.queued_jobs == 0 and reply.pending_bytes == 0 and
                        all(d.bytes_in_use == 0 for d in reply.devices),
                        "not idle after %.0f s: %s" % (scaled(timeout),
                                                        soak.describe_devices(reply)))
        return time.monotonic() - start

    def assertRssWithin(self, before, after, growth):
        self.assertLessEqual(after, before * (1 + growth), (
            "the server's RSS at rest grew from %.1f to %.1f MiB, over %d%%" % (
                before / MIB, after / MIB, 100 * growth)))


class KilledClientTest(FaultsTestCase):
    """A client process SIGKILLed while it reads a full-output stream of 16 GB
    (64 issuers x 20,000 paths x 200,000 columns): every device's bytes are
    back at 0 within 1 s of the kill, and the server keeps serving."""

    REQUEST = price_request(64, 20_000, 200_000, full=True, mean=False)
    # Measured 0.046-0.130 s in 3 passes, the last under a CPU hog
    # (docs/reliability.md); 1 s, scaled.
    BOUND = scaled(1.0)
    ROUNDS = 3

    def kill_streaming_client(self, server, stub):
        """Starts a client process and SIGKILLs it mid-stream: the kill's
        moment and the device bytes its job held just before."""
        client = subprocess.Popen([sys.executable, "-c", STREAMING_CLIENT, server.target],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(client.stdout.close)
        self.addCleanup(client.kill)
        client.stdin.write(self.REQUEST.SerializeToString())
        client.stdin.close()
        ready, _, _ = select.select([client.stdout], [], [], scaled(60))
        self.assertTrue(ready and client.stdout.readline() == b"streaming\n",
                        "the client process did not start streaming")
        time.sleep(0.3)  # mid-stream, with shards in flight
        held = sum(d.bytes_in_use for d in list_devices(stub).devices)
        self.assertGreater(held, 0, "the streamed job holds no device memory")
        self.assertIsNone(client.poll(), "the client process ended before the kill")
        client.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        client.wait(scaled(10))
        return killed, held

    def test_memory_returns_within_1_s_of_a_client_process_kill(self):
        server = self.server()
        stub = self.stub(server)
        small = dict(paths=1000, scenarios=100, seed=3, **market(4))
        with Client(server.target) as client:
            reference = soak.fingerprint(client.price(**small))
        for kill in range(1, self.ROUNDS + 1):
            killed, held = self.kill_streaming_client(server, stub)
            while (any(d.bytes_in_use for d in list_devices(stub).devices)
                   and time.monotonic() - killed < scaled(30)):
                time.sleep(0.005)
            seconds = time.monotonic() - killed
            idle = self.assertIdle(stub)
            print("kill %d: %.1f MiB on the devices, back to 0 in %.3f s after the kill "
                  "(queue and pending empty %.3f s later)" % (
                      kill, held / MIB, seconds, idle), flush=True)
            self.assertLess(seconds, self.BOUND)
            with Client(server.target) as client:
                self.assertEqual(soak.fingerprint(client.price(**small)), reference)


class StalledReaderTest(FaultsTestCase):
    """A client that reads two chunks of a full-output job and then stops
    reading: its job holds at most --max-pending-bytes-per-job (128 MiB: two
    shards of 64 MiB, 16,384 paths x 1,024 columns) of result chunks, and
    other clients' jobs still finish with their right results."""

    CAP = 128 * MIB
    IN_FLIGHT = 64 * MIB
    REQUEST = price_request(16, 16_384, 1024 * 200, full=True, mean=False)  # 13 GB of SC
    OTHERS = [dict(paths=2000, scenarios=50_000, seed=5, statistics=["mean", "stddev"],
                   **market(8)),
              dict(paths=1000, scenarios=2048, seed=6, full=True, statistics=None,
                   **market(16)),
              dict(paths=500, scenarios=300, seed=7, **market(4))]

    def pending_plateau(self, stub, seconds=3.0):
        """ListDevices.pending_bytes, sampled until it has not changed for
        `seconds` (scaled: a shard takes longer on a slow machine): (the
        highest reading, the last)."""
        seconds = scaled(seconds)
        highest, last, since, deadline = 0, -1, time.monotonic(), time.monotonic() + scaled(60)
        while time.monotonic() - since < seconds and time.monotonic() < deadline:
            pending = list_devices(stub).pending_bytes
            highest = max(highest, pending)
            if pending != last:
                last, since = pending, time.monotonic()
            time.sleep(0.02)
        return highest, last

    def test_a_stalled_reader_holds_at_most_its_cap_and_others_finish(self):
        server = self.server("--max-pending-bytes-per-job", str(self.CAP))
        stub = self.stub(server)
        with Client(server.target) as client:
            references = [soak.fingerprint(client.price(**job)) for job in self.OTHERS]
            rss_before, _ = soak.resting_rss(server.proc.pid, stub)
            stalled = pricer_pb2_grpc.PricerStub(self.channel(server.target)).Price(
                self.REQUEST, timeout=scaled(300))
            kinds = [next(stalled).WhichOneof("kind") for _ in range(3)]
            self.assertEqual(kinds, ["accepted", "chunk", "chunk"])
            highest, held = self.pending_plateau(stub)
            # Both less the blocks the devices keep idle (soak.resting_rss).
            devices = list_devices(stub)
            grown = soak.rss_bytes(server.proc.pid) - soak.kept_bytes(devices) - rss_before
            on_devices = sum(d.bytes_in_use for d in devices.devices)
            print("stalled reader: pending %.1f MiB (highest %.1f MiB) of a %d MiB cap, "
                  "%.1f MiB on the devices; server RSS +%.1f MiB" % (
                      held / MIB, highest / MIB, self.CAP // MIB, on_devices / MIB,
                      grown / MIB), flush=True)
            self.assertLessEqual(highest, self.CAP)
            # What the server holds for it: the chunks, its device buffers
            # (host memory on cpu devices) and what gRPC has in flight.
            self.assertLess(grown, self.CAP + on_devices + self.IN_FLIGHT)
            self.assertGreaterEqual(held, self.CAP // 2, "the stalled job stopped early")
            started = time.monotonic()
            for job, reference in zip(self.OTHERS, references):
                with Client(server.target) as other:
                    self.assertEqual(soak.fingerprint(other.price(timeout=scaled(120), **job)),
                                     reference)
            print("the other clients' %d jobs finished in %.2f s" % (
                len(self.OTHERS), time.monotonic() - started), flush=True)
        self.assertLessEqual(self.pending_plateau(stub, 1.0)[0], self.CAP)
        stalled.cancel()
        self.assertIdle(stub)

    def test_a_reader_stalled_past_the_limit_is_cancelled_and_frees_its_job(self):
        server = self.server("--max-pending-bytes-per-job", str(self.CAP),
                             "--stalled-reader-seconds", "2")
        stub = self.stub(server)
        stalled = pricer_pb2_grpc.PricerStub(self.channel(server.target)).Price(
            self.REQUEST, timeout=scaled(300))
        self.assertEqual(next(stalled).WhichOneof("kind"), "accepted")
        started = time.monotonic()
        seconds = self.assertIdle(stub, timeout=30)
        print("a reader stalled past --stalled-reader-seconds 2: its job's memory back "
              "%.2f s after it stopped reading" % seconds, flush=True)
        self.assertGreater(time.monotonic() - started, 2.0)  # not before the limit
        with self.assertRaises(grpc.RpcError) as ended:
            for _ in stalled:  # what gRPC had buffered, then the cancel
                pass
        self.assertEqual(ended.exception.code(), CANCELLED)
        self.assertIn("--stalled-reader-seconds", server.output())


class RandomCancelsTest(FaultsTestCase):
    """1,000 calls (4 callers x 250) of tiny and medium jobs, each cancelled
    after a random delay of up to 0.1 s: before its job is accepted, while it
    streams, or after it finished. Afterwards nothing is queued or pending,
    no device holds a byte, the calls that finished have the right results,
    and the server's RSS at rest is within 10% of what it was after a
    warm-up pass of 200 such calls."""

    CALLERS, CALLS, WARM_UP_CALLS = 4, 1000, 200
    RSS_GROWTH = 0.10
    JOBS = [dict(paths=1000, scenarios=100, **market(4)),
            dict(paths=5000, scenarios=20_000, statistics=["mean", "stddev", "var:0.99"],
                 **market(32)),
            dict(paths=2000, scenarios=2048, full=True, statistics=None, **market(16))]
    POOL = [dict(job, seed=seed) for job in JOBS for seed in (1, 2)]

    def cancel_at_random(self, stub, calls, references, seed):
        """`calls` calls over CALLERS threads: how many ended "before
        accepted", "while streaming", "finished" (with the reference's
        result) or otherwise (named)."""
        outcomes = collections.Counter()
        lock = threading.Lock()

        def caller(k):
            rng = random.Random(seed * 1000 + k)
            for _ in range(calls // self.CALLERS):
                index = rng.randrange(len(self.POOL))
                # The same mix of outcomes on a slow machine: the delay scaled.
                done = soak.stream_price(stub, self.POOL[index],
                                         cancel_after_seconds=rng.uniform(0, scaled(0.1)))
                if done.code == OK:
                    outcome = "finished" if soak.fingerprint(done.result) == references[index] \
                        else "finished with a wrong result"
                elif done.code == CANCELLED:
                    outcome = "while streaming" if done.replies else "before accepted"
                else:
                    outcome = "ended %s %s" % (done.code, done.details)
                with lock:
                    outcomes[outcome] += 1

        threads = [threading.Thread(target=caller, args=(k,)) for k in range(self.CALLERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(scaled(300))
            self.assertFalse(thread.is_alive(), "a caller did not finish in %.0f s" % scaled(300))
        return outcomes

    def test_1000_random_cancels_leave_nothing_behind(self):
        server = self.server()
        stub = self.stub(server)
        with Client(server.target) as client:
            references = [soak.fingerprint(client.price(**job)) for job in self.POOL]
        self.cancel_at_random(stub, self.WARM_UP_CALLS, references, seed=1)
        before, _ = soak.resting_rss(server.proc.pid, stub)
        started = time.monotonic()
        outcomes = self.cancel_at_random(stub, self.CALLS, references, seed=2)
        seconds = time.monotonic() - started
        idle = self.assertIdle(stub)
        after, _ = soak.resting_rss(server.proc.pid, stub)
        print("%d calls in %.1f s: %s; idle %.2f s after the last; RSS at rest %.1f MiB "
              "before, %.1f MiB after (%+.1f%%)" % (
                  self.CALLS, seconds, dict(outcomes), idle, before / MIB, after / MIB,
                  100 * (after / before - 1)), flush=True)
        self.assertEqual(sum(outcomes.values()), self.CALLS)
        self.assertEqual(set(outcomes), {"before accepted", "while streaming", "finished"})
        self.assertRssWithin(before, after, self.RSS_GROWTH)


class SlowReadersMemoryTest(FaultsTestCase):
    """Five clients read 240 MB full-output streams each (32 issuers x 10,000
    paths x 6,000 columns) at once, sleeping 50 ms after each 4 MB chunk:
    after they end, the server's RSS at rest is within 20% of what it was
    before them (the server trims its heap 0.5 s after the last call)."""

    READERS = 5
    REQUEST = price_request(32, 10_000, 6000, full=True, mean=False)
    RSS_GROWTH = 0.20

    def test_rss_returns_after_five_slow_readers(self):
        server = self.server(devices="cpu")
        stub = self.stub(server)
        before, _ = soak.resting_rss(server.proc.pid, stub)
        peak, sampling = [before], threading.Event()

        def sample():
            while not sampling.is_set():
                peak[0] = max(peak[0], soak.rss_bytes(server.proc.pid))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        readers = [CallReader(pricer_pb2_grpc.PricerStub(self.channel(server.target)).Price(
            self.REQUEST, timeout=scaled(300)), on_chunk=lambda chunk: time.sleep(0.05))
            for _ in range(self.READERS)]
        for reader in readers:
            reader.finish(300)
            self.assertCall(reader, OK)
            self.assertEqual(len(reader.finished()), 1)
        streamed = sum(reader.streamed_bytes for reader in readers)
        after, _ = soak.resting_rss(server.proc.pid, stub)
        sampling.set()
        sampler.join()
        print("%d slow readers, %.0f MB streamed: RSS %.1f MiB before, %.1f MiB at the peak, "
              "%.1f MiB at rest after (%+.1f%%)" % (
                  self.READERS, streamed / 1e6, before / MIB, peak[0] / MIB, after / MIB,
                  100 * (after / before - 1)), flush=True)
        self.assertGreater(streamed, self.READERS * 240e6)
        self.assertRssWithin(before, after, self.RSS_GROWTH)


if __name__ == "__main__":
    pricerd_process.main()
