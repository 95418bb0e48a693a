"""Requests and calls of the operations tests (operations_*_test.py):
PriceRequests of a known size and cost, the status of a unary call, and a
Price stream read on its own thread. Its waits take seconds on an unloaded
machine and scale them by PRICER_TEST_TIME_SCALE (tests/binaries.py)."""

import os
import sys
import threading
import time

import grpc

from pricer_client._proto import pricer_pb2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import scaled  # noqa: E402  (tests/binaries.py)

OK = grpc.StatusCode.OK


def price_request(issuers, paths, columns, *, seed=1, full=False, mean=True,
                  terminal_prices=False, priority=0, maturity=1.0):
    """Explicit issuers (spot 5 + 0.01 i, volatility 0.1 + 0.3 i / N),
    generated U(0,1) scenario columns; statistics mean unless full."""
    request = pricer_pb2.PriceRequest(paths=paths, seed=seed, rate=0.01, maturity=maturity,
                                      priority=priority)
    request.market.explicit.spot.extend(5.0 + 0.01 * i for i in range(issuers))
    request.market.explicit.volatility.extend(0.1 + 0.3 * i / issuers for i in range(issuers))
    request.scenarios.generated.columns = columns
    request.scenarios.generated.seed = seed + 1
    request.scenarios.generated.value_max = 1.0
    request.output.full = full
    if mean:
        request.output.statistics.mean = True
    request.output.terminal_prices = terminal_prices
    return request


def small_request(**kwargs):
    return price_request(4, 1000, 100, **kwargs)


def long_request():
    """A stats-mode job of many short shards (P N small, 256-column aligned
    shards of ~64 MiB of SC each): tens of seconds of work on two cores."""
    return price_request(8, 2000, 40_000_000)


def call_status(function, *args, **kwargs):
    """(code, details, reply) of a unary call."""
    try:
        return OK, "", function(*args, **kwargs)
    except grpc.RpcError as error:
        return error.code(), error.details(), None


class CallReader(threading.Thread):
    """Reads one Price stream on its own thread: the replies (chunks go to
    on_chunk when given, else are kept), when each chunk came, the serialized
    bytes received, and how the call ended."""

    def __init__(self, call, on_chunk=None):
        super().__init__(daemon=True)
        self.call = call
        self.on_chunk = on_chunk
        self.accepted = None
        self.replies = []
        self.chunk_times = []
        self.streamed_bytes = 0
        self.code = None
        self.details = ""
        self.started_at = time.time()
        self.ended_at = None
        self._accepted_or_ended = threading.Event()
        self.start()

    def run(self):
        try:
            for reply in self.call:
                self.streamed_bytes += reply.ByteSize()
                kind = reply.WhichOneof("kind")
                if kind == "accepted":
                    self.accepted = reply.accepted
                    self._accepted_or_ended.set()
                if kind == "chunk":
                    self.chunk_times.append(time.time())
                    if self.on_chunk is not None:
                        self.on_chunk(reply.chunk)
                        continue
                self.replies.append(reply)
            self.code = OK
        except grpc.RpcError as error:
            self.code, self.details = error.code(), error.details()
        except Exception as error:  # an on_chunk failure: reported as the call's result
            self.code, self.details = "exception", repr(error)
            self.call.cancel()
        finally:
            self.ended_at = time.time()
            self._accepted_or_ended.set()

    def wait_accepted(self, test, timeout=60):
        self._accepted_or_ended.wait(scaled(timeout))
        test.assertIsNotNone(self.accepted,
                             "no `accepted` reply: %s %s" % (self.code, self.details))
        return self.accepted

    def finish(self, timeout=120):
        self.join(scaled(timeout))
        if self.is_alive():
            self.call.cancel()
            self.join(scaled(10))
            raise AssertionError("the Price call did not end within %.0f s" % scaled(timeout))
        return self

    def finished(self):
        return [r.finished for r in self.replies if r.WhichOneof("kind") == "finished"]


def price(stub, request, metadata=None, timeout=120):
    """One Price call to its end (its deadline `timeout`, scaled)."""
    call = stub.Price(request, metadata=metadata, timeout=scaled(timeout))
    return CallReader(call).finish(timeout + 10)
