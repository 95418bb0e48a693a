"""A soak of a real pricerd (docs/reliability.md): SOAK_CLIENTS (64) clients
on 127.0.0.1 send, for SOAK_SECONDS (60), a random mix of tiny statistics
jobs, full-output jobs of a few MB, correlated and antithetic jobs, uploads,
jobs priced by scenario-set id, jobs cancelled at random points, slow readers
and ListDevices calls, to pricerd with two cpu devices of 1 GiB.

Every job is first run alone, and its statistics checked against their
float64 recomputation from its SC (SC against ST * A in float64 where A is
known, the antithetic pairs against each other); in the soak every result
must be bit-identical to that reference run, and the full-output ones are
recomputed again. Afterwards no call may have failed, every device must hold
0 bytes with nothing queued or pending, and the server's RSS at rest after
the soak may be at most 10% above its highest at rest after three short
warm-up passes of the same mix.

    PYTHONPATH=client/python python3 \\
        tests/reliability/soak_test.py --pricerd build-move/server/pricerd \\
        --pricer build-move/client/pricer

SOAK_SECONDS and SOAK_CLIENTS scale it; SOAK_SEED varies the mix."""

import collections
import os
import random
import sys
import threading
import time

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_clients as soak  # noqa: E402  (puts tests/service on sys.path)
import pricerd_process  # noqa: E402
from binaries import scaled  # noqa: E402  (tests/binaries.py, on sys.path through pricerd_process)
from pricer_client._proto import pricer_pb2, pricer_pb2_grpc  # noqa: E402
from pricer_client import Client  # noqa: E402

CLIENTS = int(os.environ.get("SOAK_CLIENTS", "64"))
SECONDS = float(os.environ.get("SOAK_SECONDS", "60"))
SEED = int(os.environ.get("SOAK_SEED", "1"))
WARM_UP_PASSES, WARM_UP_SECONDS = 3, max(3.0, SECONDS / 20)
# Two devices, and room for every client's job (cancelled ones included) in
# the queue: anonymous callers are one client for the quotas.
DEVICES, DEVICE_MEMORY = "cpu:2", "1GiB"
FLAGS = ("--max-queued-jobs", "256", "--max-jobs-per-client", "256")
RSS_GROWTH = 0.10

STATS = ["mean", "stddev", "min", "max", "quantile:0.5", "var:0.99", "es:0.975"]
SEEDS = (1, 2, 3)
# The stored sets of the by-id jobs and of the uploads that send one again
# (1.25 MiB each, two chunks of the client's 1 MiB).
POOL = [np.random.default_rng(100 + k).uniform(0, 1, size=(8, 40_000)).astype(np.float32)
        for k in range(len(SEEDS))]


def market(n):
    return dict(spot=[5.0 + 5.0 * i / n for i in range(n)],
                volatility=[0.1 + 0.4 * i / n for i in range(n)])


def by_id_columns(seed):
    begin = 1000 * seed + 17  # off the 256-column shard grid
    return begin, begin + 300


def checked_jobs(seed):
    """The job of each checked kind for one seed, as Client.price arguments."""
    common = dict(seed=seed, rate=0.02, maturity=1.0, statistics=STATS)
    correlation = np.full((24, 24), 0.4) + 0.6 * np.eye(24)
    begin, end = by_id_columns(seed)
    return {
        "stats": dict(common, **market(8), paths=2000, scenarios=512),
        "full": dict(common, **market(32), paths=4000, scenarios=320, full=True),
        "correlated": dict(common, **market(24), correlation=correlation, paths=2000,
                           scenarios=256, full=True),
        "antithetic": dict(common, **market(16), antithetic=True, paths=3000, scenarios=256,
                           full=True, terminal_prices=True),
        "slow": dict(common, **market(16), paths=8000, scenarios=256, full=True),
        "by_id": dict(common, **market(8), scenario_set=Client.scenario_set_id(POOL[seed - 1]),
                      column_begin=begin, column_end=end, paths=2000, full=True,
                      terminal_prices=True),
    }


JOBS = {seed: checked_jobs(seed) for seed in SEEDS}
# A job that runs long enough to be cancelled midway: 1.5e10 flops.
CANCELLED_JOB = dict(market(64), paths=4000, scenarios=30_000, seed=5, rate=0.02,
                     statistics=["mean", "var:0.99"])


def reference_job(kind, seed):
    """What the reference run asks: SC always, so that its statistics are
    recomputed; the by-id job's matrix inline."""
    job = dict(JOBS[seed][kind], full=True)
    if kind == "by_id":
        del job["scenario_set"]
        job["scenarios"] = POOL[seed - 1]
    return job


def reference_runs(stub, target):
    """The pool stored, and each checked job run alone and checked:
    {(kind, seed): fingerprint}."""
    with Client(target) as client:
        for a in POOL:
            if client.upload(a) != Client.scenario_set_id(a):
                raise AssertionError("the server gives a set of the pool another id")
    references = {}
    for seed in SEEDS:
        for kind, job in JOBS[seed].items():
            asked = reference_job(kind, seed)
            streamed = soak.stream_price(stub, asked)
            if streamed.result is None:
                raise AssertionError("reference run of %s (seed %d): %r" % (kind, seed, streamed))
            soak.check_statistics(streamed.result, asked)
            if kind == "antithetic":
                soak.check_antithetic(streamed.result, asked)
            if kind == "by_id":
                begin, end = by_id_columns(seed)
                soak.check_product(streamed.result, POOL[seed - 1][:, begin:end], job["spot"])
            reference = soak.fingerprint(streamed.result)
            if not job.get("full"):
                reference["full"] = None  # the soak asks for statistics only
            references[kind, seed] = reference
    return references


class Worker:
    """One client: its own connection for raw calls, a pricer_client.Client
    (a second connection), and its own random choices."""

    def __init__(self, target, seed):
        self.rng = random.Random(seed)
        self.channel = grpc.insecure_channel(target)
        self.stub = pricer_pb2_grpc.PricerStub(self.channel)
        self.client = Client(target)

    def close(self):
        self.client.close()
        self.channel.close()


class Soak:
    """Workers that run random operations until a time, and what they saw.
    `name` makes each pass's random choices (and new scenario sets) its own."""

    def __init__(self, target, references, name):
        self.target, self.references, self.name = target, references, name
        self.lock = threading.Lock()
        self.calls = collections.Counter()
        self.outcomes = collections.Counter()  # of the cancelled jobs
        self.errors = []

    def run(self, seconds, clients):
        stop_at = time.monotonic() + seconds
        threads = [threading.Thread(target=self.work, args=(k, stop_at)) for k in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def work(self, index, stop_at):
        kinds, weights = zip(*WEIGHTS.items())
        worker = None
        try:
            worker = Worker(self.target, "%d/%s/%d" % (SEED, self.name, index))
            while time.monotonic() < stop_at:
                kind = worker.rng.choices(kinds, weights)[0]
                try:
                    OPERATIONS[kind](self, worker)
                except Exception as error:  # every failure is counted and shown
                    self.failed("%s: %s" % (kind, error))
                with self.lock:
                    self.calls[kind] += 1
        except BaseException as error:
            self.failed("client %d stopped: %r" % (index, error))
        finally:
            if worker is not None:
                worker.close()

    def failed(self, what):
        with self.lock:
            self.errors.append(what)

    def compare(self, kind, seed, result):
        difference = soak.first_difference(soak.fingerprint(result), self.references[kind, seed])
        if difference is not None:
            raise AssertionError("%s of seed %d differs from the reference run" % (
                difference, seed))


def checked_stream(worker, kind, **reading):
    """A raw Price call of a checked job of a random seed: it ended OK, and
    its statistics are those of its own SC. (seed, the PriceResult)."""
    seed = worker.rng.choice(SEEDS)
    job = JOBS[seed][kind]
    streamed = soak.stream_price(worker.stub, job, **reading)
    if streamed.result is None:
        raise AssertionError("seed %d: %r" % (seed, streamed))
    soak.check_statistics(streamed.result, job)
    return seed, streamed.result


def full_output(kind):
    def operation(run, worker):
        run.compare(kind, *checked_stream(worker, kind))
    return operation


def slow_reader(run, worker):
    """16 columns per chunk (512 KB), 20-80 ms of sleep after each."""
    pause = worker.rng.uniform(0.02, 0.08)
    run.compare("slow", *checked_stream(worker, "slow", chunk_columns=16, pause=pause))


def client_price(kind):
    """The same job through pricer_client.Client.price."""
    def operation(run, worker):
        seed = worker.rng.choice(SEEDS)
        run.compare(kind, seed, worker.client.price(**JOBS[seed][kind], timeout=scaled(120)))
    return operation


def upload(run, worker):
    """Half the time a set of the pool again, through Client.upload (its id);
    else a small new one in one raw chunk: stored (existed false) and priced
    by id with the right v0."""
    rng = worker.rng
    if rng.random() < 0.5:
        a = POOL[rng.randrange(len(POOL))]
        uploaded = worker.client.upload(a, chunk_bytes=rng.choice([256 << 10, 1 << 20]))
        if uploaded != Client.scenario_set_id(a):
            raise AssertionError("a set of the pool stored again as %s" % uploaded)
        return
    a = np.random.default_rng(rng.getrandbits(64)).uniform(
        0, 1, size=(8, rng.randint(1, 64))).astype(np.float32)
    chunk = pricer_pb2.ScenarioChunk(rows=8, columns=a.shape[1], values=a.tobytes(order="F"))
    reply = worker.stub.UploadScenarios(iter([chunk]), timeout=scaled(60))
    expected = pricer_pb2.ScenarioSet(id=Client.scenario_set_id(a), rows=8, columns=a.shape[1],
                                      bytes=a.nbytes, existed=False)
    if reply != expected:
        raise AssertionError("upload of 8 x %d: %s, not %s" % (a.shape[1], reply, expected))
    spot = market(8)["spot"]
    priced = worker.client.price(**market(8), paths=100, scenario_set=reply.id,
                                 statistics=["mean"], timeout=scaled(60))
    if not np.allclose(priced.statistics["v0"], a.astype(np.float64).T @ spot, rtol=1e-12, atol=0):
        raise AssertionError("the new set %s prices with the wrong v0" % reply.id)


CANCEL_OUTCOMES = ("before accepted", "after accepted", "after chunks", "finished first")


def cancel(run, worker):
    """CANCELLED_JOB cancelled after 0-3 replies or 0-0.6 s: the call ends
    CANCELLED, or OK with every column when the job was done first."""
    rng = worker.rng
    when = ({"cancel_after_replies": rng.randint(0, 3)} if rng.random() < 0.5
            else {"cancel_after_seconds": rng.uniform(0.0, 0.6)})
    streamed = soak.stream_price(worker.stub, CANCELLED_JOB, **when)
    if streamed.code == grpc.StatusCode.CANCELLED:
        outcome = CANCEL_OUTCOMES[min(streamed.replies, 2)]  # by the replies read first
    elif streamed.result is not None and np.isfinite(streamed.result.statistics["var_0.99"]).all():
        outcome = "finished first"
    else:
        raise AssertionError("cancel %s: %r" % (when, streamed))
    with run.lock:
        run.outcomes[outcome] += 1


def devices(run, worker):
    reply = worker.stub.ListDevices(pricer_pb2.ListDevicesRequest(), timeout=scaled(10))
    if len(reply.devices) != 2:
        raise AssertionError("%d devices listed" % len(reply.devices))
    soak.check_devices(reply)


OPERATIONS = {"stats": client_price("stats"), "full": full_output("full"),
              "correlated": full_output("correlated"), "antithetic": full_output("antithetic"),
              "slow": slow_reader, "by_id": client_price("by_id"), "upload": upload,
              "cancel": cancel, "devices": devices}
WEIGHTS = {"stats": 24, "full": 10, "correlated": 8, "antithetic": 8, "slow": 4, "by_id": 10,
           "upload": 10, "cancel": 14, "devices": 12}


def summary(run, readings, after, wall):
    calls = " ".join("%s %d" % (kind, run.calls[kind]) for kind in WEIGHTS)
    cancels = ", ".join("%s %d" % (when, run.outcomes[when]) for when in CANCEL_OUTCOMES)
    return ("soak: %d clients, %.0f s: calls %s (%d in all); errors %d; cancels: %s; "
            "RSS at rest %s MiB before (after each warm-up pass), %.1f MiB after; "
            "wall %.1f s" % (
                CLIENTS, SECONDS, calls, sum(run.calls.values()), len(run.errors), cancels,
                "/".join("%.1f" % (r / soak.MIB) for r in readings), after / soak.MIB, wall))


class SoakTest(pricerd_process.OperationsTestCase):
    def assertNoErrors(self, run, server, what):
        self.assertEqual(run.errors, [], "%d errors in the %s, the first: %s\nserver log:\n%s" % (
            len(run.errors), what, run.errors[:10], server.output()[-3000:]))

    def warm_up(self, server, stub, references):
        """WARM_UP_PASSES short passes of the soak, each checked: the resting
        RSS after each. It moves by several percent from one pass to the next
        (glibc's arenas keep what the trim cannot return), so the soak is
        held to the highest, not to one draw."""
        readings = []
        for number in range(WARM_UP_PASSES):
            run = Soak(server.target, references, "warm-up %d" % number)
            run.run(WARM_UP_SECONDS, CLIENTS)
            self.assertNoErrors(run, server, "warm-up")
            readings.append(soak.resting_rss(server.proc.pid, stub)[0])
        return readings

    def test_many_clients_for_a_while(self):
        started = time.monotonic()
        server = pricerd_process.Server(FLAGS, devices=DEVICES, device_memory=DEVICE_MEMORY)
        self.addCleanup(server.stop)
        stub = self.stub(server)
        references = reference_runs(stub, server.target)
        readings = self.warm_up(server, stub, references)
        before = max(readings)

        run = Soak(server.target, references, "soak")
        run.run(SECONDS, CLIENTS)
        after, rest = soak.resting_rss(server.proc.pid, stub)
        print(summary(run, readings, after, time.monotonic() - started), flush=True)

        self.assertNoErrors(run, server, "soak")
        for kind in WEIGHTS:
            self.assertGreater(run.calls[kind], 0, kind)
        for when in CANCEL_OUTCOMES[:3]:
            self.assertGreater(run.outcomes[when], 0, "no cancel " + when)
        self.assertEqual((rest.queued_jobs, rest.pending_bytes), (0, 0),
                         soak.describe_devices(rest))
        self.assertEqual([d.bytes_in_use for d in rest.devices], [0, 0],
                         soak.describe_devices(rest))
        soak.check_devices(rest)
        self.assertLessEqual(after, before * (1 + RSS_GROWTH),
                             "RSS %.1f MiB after the soak, %.1f MiB before" % (
                                 after / soak.MIB, before / soak.MIB))


if __name__ == "__main__":
    pricerd_process.main()
