"""What the reliability tests (tests/reliability/*_test.py) drive a real
pricerd with and check its answers by: jobs written as the keyword arguments
of pricer_client.Client.price, one raw Price stream read on the calling
thread (slowly, or cancelled at a chosen point), the float64 recomputation of
a job's statistics from its own full output, and the server at rest (device
bytes, queue, pending chunks, RSS).

The scripts import it after putting this folder on sys.path; it puts
tests/service (pricerd_process, pricer_calls) and tests/client on sys.path
for them."""

import inspect
import os
import sys
import threading
import time

import grpc
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
for folder in ("service", "client"):
    sys.path.insert(0, os.path.join(HERE, "..", folder))

from cli_numpy_test import quantile  # noqa: E402  (pricer.proto's quantile rule)
from pricer_client._proto import pricer_pb2  # noqa: E402
from pricer_calls import OK  # noqa: E402
from pricer_client import Client  # noqa: E402
from pricer_client._calls import prepare_price  # noqa: E402
from pricer_client._requests import statistics_selection  # noqa: E402
from pricerd_process import rss_bytes  # noqa: E402
from binaries import scaled  # noqa: E402  (tests/binaries.py, on sys.path through pricerd_process)

MIB = 1 << 20

# Client.price()'s keyword arguments and their defaults: a job is a dict of
# some of them, and the same dict serves Client.price and stream_price.
PRICE_DEFAULTS = {name: p.default for name, p in inspect.signature(Client.price).parameters.items()
                  if p.kind is inspect.Parameter.KEYWORD_ONLY}


def prepared(job):
    """Client.price(**job)'s checked request and the Results its replies go
    to (pricer_client._calls.PreparedPrice)."""
    return prepare_price(**{**PRICE_DEFAULTS, **job})


class Streamed:
    """How one raw Price call ended: code, details, the PriceResult (None
    unless it ended OK with a `finished` reply) and the replies read."""

    def __init__(self, code, details, result, replies):
        self.code, self.details, self.result, self.replies = code, details, result, replies

    def __repr__(self):
        return "%s %s after %d replies" % (self.code, self.details, self.replies)


def _take(results, reply):
    """Gives one reply to `results`; its kind."""
    kind = reply.WhichOneof("kind")
    if kind == "accepted":
        results.accepted(reply.accepted)
    elif kind == "chunk":
        results.chunk(reply.chunk)
    elif kind == "prices":
        p = reply.prices
        results.prices(p.issuer_begin, p.issuer_end, p.rows, p.values)
    elif kind == "finished":
        results.finished(reply.finished)
    return kind


def stream_price(stub, job, *, chunk_columns=0, pause=0.0, cancel_after_replies=None,
                 cancel_after_seconds=None, timeout=120):
    """One Price call of `job` on `stub`, its replies put together by the
    Python client's own Results. `pause`: seconds of sleep after each chunk
    (a slow reader). The call is cancelled once `cancel_after_replies`
    replies have been read (0: before any) or `cancel_after_seconds` after
    it starts. `timeout`: the call's deadline, scaled."""
    call_plan = prepared(job)
    request, results = call_plan.request, call_plan.results
    request.output.chunk_columns = chunk_columns
    call = stub.Price(request, timeout=scaled(timeout))
    timer = None
    if cancel_after_seconds is not None:
        timer = threading.Timer(cancel_after_seconds, call.cancel)
        timer.start()
    replies, finished = 0, False
    try:
        if cancel_after_replies == 0:
            call.cancel()
        for reply in call:
            replies += 1
            kind = _take(results, reply)
            finished = finished or kind == "finished"
            if kind == "chunk" and pause:
                time.sleep(pause)
            if replies == cancel_after_replies:
                call.cancel()
    except grpc.RpcError as error:
        return Streamed(error.code(), error.details(), None, replies)
    finally:
        if timer is not None:
            timer.cancel()
    if not finished:
        return Streamed("no finished reply", "", None, replies)
    return Streamed(OK, "", results.result(), replies)


# ---- the float64 recomputation of the statistics (docs/risk.md) ----

def recomputed_statistics(sc, v0, rate, maturity, named):
    """The statistics `named` ((name, kind, level), as pricer_client names
    them) of the float32 columns of `sc` (P x M), in float64, by the
    conventions of pricer.proto's ColumnStatistics; `v0` is today's value of
    each column."""
    x = np.sort(sc.astype(np.float64), axis=0)
    discount = np.exp(-rate * maturity)
    out = {}
    for name, kind, level, *_ in named:
        if kind == "mean":
            out[name] = x.mean(axis=0)
        elif kind == "stddev":
            out[name] = x.std(axis=0, ddof=1) if len(x) > 1 else np.zeros(x.shape[1])
        elif kind in ("min", "max"):
            out[name] = x[0] if kind == "min" else x[-1]
        elif kind == "quantile":
            out[name] = quantile(x, level)
        else:
            q = quantile(x, 1 - level)
            if kind == "var":
                out[name] = v0 - discount * q
            else:
                # ES's tail: the k smallest of each sorted column (docs/risk.md).
                k = int(np.floor((len(x) - 1) * (1 - level))) + 1
                out[name] = v0 - discount * x[:k].mean(axis=0)
    return out


# Order statistics are exact (the same float32 values, the same float64
# interpolation); sums are compared to 1e-9, relative to the statistic (VaR
# and ES: to v0 when larger, as they are differences of values near it).
_EXACT = ("min", "max", "quantile")
_OF_V0 = ("var", "es")


def check_statistics(result, job):
    """Raises AssertionError unless every statistic of `result` (a
    PriceResult with `full`) equals its float64 recomputation from the same
    call's SC."""
    items = job.get("statistics", PRICE_DEFAULTS["statistics"])
    named = statistics_selection(items)[1] if items is not None else []
    stats = result.statistics
    want = recomputed_statistics(result.full, stats["v0"], job.get("rate", 0.0),
                                 job.get("maturity", 1.0), named)
    for name, kind, *_ in named:
        got = stats[name]
        if kind in _EXACT:
            bad = got != want[name]
        else:
            scale = np.abs(want[name])
            if kind in _OF_V0:
                scale = np.maximum(scale, np.abs(stats["v0"]))
            bad = ~(np.abs(got - want[name]) <= 1e-9 * scale)
        if bad.any():
            j = int(np.argmax(bad))
            raise AssertionError("%s of column %d is %r, its float64 recomputation %r "
                                 "(%d columns differ)" % (name, result.column_begin + j,
                                                          got[j], want[name][j], bad.sum()))


def check_product(result, a, spot):
    """Raises AssertionError unless SC equals ST * A in float64 to float32
    rounding and v0 equals A^T spot; `a` holds the priced columns."""
    a64 = np.asarray(a, dtype=np.float32).astype(np.float64)
    st = result.terminal_prices.astype(np.float64)
    exact, size = st @ a64, st @ np.abs(a64)
    error = np.abs(result.full - exact) / np.maximum(size, 1e-30)
    if error.max() > 1e-5:
        raise AssertionError("SC differs from ST * A by %.3g of |ST| |A|" % error.max())
    v0 = a64.T @ np.asarray(spot, dtype=np.float64)
    if not np.allclose(result.statistics["v0"], v0, rtol=1e-12, atol=0):
        raise AssertionError("v0 differs from A^T spot")


def check_antithetic(result, job):
    """Raises AssertionError unless the shocks behind ST (from
    terminal_prices) of paths 2k and 2k + 1 are each other's negation."""
    spot, volatility = np.asarray(job["spot"]), np.asarray(job["volatility"])
    rate, maturity = job.get("rate", 0.0), job.get("maturity", 1.0)
    drift = (rate - volatility ** 2 / 2) * maturity
    log_growth = np.log(result.terminal_prices.astype(np.float64) / spot) - drift
    pairs = len(log_growth) // 2 * 2
    mismatch = np.abs(log_growth[0:pairs:2] + log_growth[1:pairs:2]).max()
    if mismatch > 1e-5:
        raise AssertionError("antithetic paths do not mirror: log-growths differ by %.3g "
                             "from their negation" % mismatch)


def fingerprint(result):
    """What must be bit-identical between two runs of one job: the
    statistics' bytes, SC's and ST's."""
    parts = {name: values.tobytes() for name, values in result.statistics.items()}
    for name in ("full", "terminal_prices"):
        array = getattr(result, name)
        parts[name] = None if array is None else np.asfortranarray(array).tobytes(order="F")
    return parts


def first_difference(got, want):
    """The name of the first part of two fingerprints that differs, or None."""
    for name in sorted(set(got) | set(want)):
        if got.get(name) != want.get(name):
            return name
    return None


# ---- the server at rest ----

def check_devices(reply):
    """Raises AssertionError unless every device is usable and within its
    budget, now and at its peak."""
    for device in reply.devices:
        if device.lost or not 0 <= device.bytes_in_use <= device.peak_bytes \
                or device.peak_bytes > device.memory_budget_bytes:
            raise AssertionError("device %s: %d bytes in use, peak %d, budget %d, lost %r" % (
                device.name, device.bytes_in_use, device.peak_bytes,
                device.memory_budget_bytes, device.lost))


def wait_until_idle(stub, timeout=20):
    """ListDevices until no job is queued, no chunk pending and no device
    holds a byte, or `timeout` (scaled) has passed; the last reply, for the
    caller to assert on."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        reply = stub.ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10)
        idle = reply.queued_jobs == 0 and reply.pending_bytes == 0 and \
            all(d.bytes_in_use == 0 for d in reply.devices)
        if idle or time.monotonic() > deadline:
            return reply
        time.sleep(0.1)


def describe_devices(reply):
    return "queued %d, pending %d bytes, %s" % (
        reply.queued_jobs, reply.pending_bytes,
        ", ".join("%s %d bytes" % (d.name, d.bytes_in_use) for d in reply.devices))


def resting_rss(pid, stub, settle=2.0):
    """The server's RSS once it is idle and has trimmed its heap (0.5 s after
    the last call), less the blocks its devices keep for their next jobs
    (ListDevices' idle_block_bytes, which depend on the shapes of the last
    jobs), in bytes: the lowest of a few readings over `settle` seconds
    (scaled) after the idle state, and that state."""
    settle = scaled(settle)
    reply = wait_until_idle(stub)
    time.sleep(settle / 2)
    readings = []
    for _ in range(5):
        readings.append(rss_bytes(pid))
        time.sleep(settle / 10)
    return min(readings) - kept_bytes(reply), reply


def kept_bytes(reply):
    """The bytes of the blocks a ListDevices reply's devices keep idle for
    their next jobs: resident (BlockPool::Host faults in each new
    block's pages), in the server's RSS."""
    return sum(device.idle_block_bytes for device in reply.devices)
