"""The parts of a price() call and their retries (docs/retry-protocol.md):
each part calls until every column of its range, and the terminal prices
when it asks for them, have arrived, asking a broken call's successor only
for what is still missing (with a target, for its span in one call). `Part`
holds what has arrived and decides what to ask and whether to retry;
`run_parts` drives the parts with blocking calls, pricer_client.aio with
asyncio ones."""

import concurrent.futures
import logging
import time

import grpc

from pricer_client._errors import PricerError, contradiction, from_rpc_error
from pricer_client._proto import pricer_pb2
from pricer_client._protocol import (BACKOFF_MULTIPLIER, FIRST_BACKOFF_SECONDS, MAX_RETRIES,
                                     RETRYABLE_CODES)
from pricer_client._ranges import Ranges
from pricer_client._ring import SharedRing

# The logger the retries are reported to, as documented (client/python/README.md).
_log = logging.getLogger("pricer_client.client")


def make_parts(request, span, parts, results, deadline, shared_memory=False):
    """The `parts` Parts of `request`'s column range `span` (None: one part,
    the range learned from `accepted`), filling `results` (a Results); SC
    through a shared-memory ring of each call's when `shared_memory`."""

    def piece(k):
        if span is None:
            return None
        return (span[0] + (span[1] - span[0]) * k // parts,
                span[0] + (span[1] - span[0]) * (k + 1) // parts)

    # Every part computes the same ST; the first sends it.
    return [Part(request, piece(k), request.output.terminal_prices and k == 0, results, deadline,
                 shared_memory) for k in range(parts)]


def run_parts(stub, call):
    """Prices the parts of `call` (a _calls.PreparedPrice) concurrently, each
    in a thread; raises the first failed part's PricerError."""
    work = make_parts(call.request, call.span, call.parts, call.results, call.deadline,
                      call.shared_memory)
    if len(work) == 1:
        _run(stub, work[0])
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(work)) as pool:
            list(pool.map(lambda part: _run(stub, part), work))


def _run(stub, part):
    with part:
        while True:
            before = part.progress()
            try:
                for asked, with_prices in part.calls():
                    call = stub.Price(part.request(asked, with_prices), timeout=part.timeout())
                    try:
                        for reply in call:
                            part.take(reply, asked)
                    except grpc.RpcError:
                        raise
                    except BaseException:
                        call.cancel()  # our own error: stop the job
                        raise
                    part.check_complete(asked, with_prices)
                return
            except grpc.RpcError as error:
                backoff = part.retry_after(error, before)
            time.sleep(backoff)


class Part:
    """One column range of a request, what has arrived of it and how many
    retries it has made; with `shared_memory`, the ring of its current call
    (a context manager: leaving it closes the ring)."""

    def __init__(self, request, span, terminal_prices, results, deadline, shared_memory=False):
        self._results, self._deadline = results, deadline
        self._shared_memory, self._ring = shared_memory, None
        self._request = pricer_pb2.PriceRequest()
        self._request.CopyFrom(request)
        self._span = span  # None: the request's own range, learned from `accepted`
        self._terminal_prices = terminal_prices
        self._targeted = request.HasField("target")
        output = request.output
        # False for a request of terminal prices only: no chunk comes.
        self._columns_wanted = output.full or output.HasField("statistics") or not terminal_prices
        self._columns, self._prices = Ranges(), Ranges()
        self._before = Ranges()  # the columns here when the current call began
        self._issuers = 0
        self._retries, self._backoff = 0, FIRST_BACKOFF_SECONDS

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._close_ring()

    def _close_ring(self):
        if self._ring is not None:
            self._ring.close()
            self._ring = None

    def progress(self):
        """How much has arrived: a retry that changes it is not counted."""
        return self._columns.count + self._prices.count

    def _prices_missing(self):
        return self._terminal_prices and (
            self._issuers == 0 or bool(self._prices.missing(0, self._issuers)))

    def _missing_columns(self, span):
        return self._columns.missing(*span) if self._columns_wanted else []

    def _complete(self):
        return (self._span is not None and not self._missing_columns(self._span)
                and not self._prices_missing())

    def _describe(self):
        """What a retry asks for, for the log."""
        if self._span is None:
            return "the call"
        missing = sum(b - a for a, b in self._missing_columns(self._span))
        return f"columns [{self._span[0]}, {self._span[1]}) ({missing} missing)"

    def retry_after(self, error, before):
        """The seconds to wait before calling again for what `error` broke
        off, `before` the progress() when the calls began; or raises the
        PricerError that ends the part."""
        code, details = error.code(), error.details()
        if code not in RETRYABLE_CODES:
            raise from_rpc_error(error) from None
        if self._complete():
            return 0  # it broke after the last column: calls() asks for nothing
        # A call that brought something new restarts the count: a long job
        # survives several outages, one that cannot progress stops.
        if self.progress() > before:
            self._retries, self._backoff = 0, FIRST_BACKOFF_SECONDS
        if self._retries == MAX_RETRIES:
            raise from_rpc_error(error) from None
        self._retries += 1
        _log.warning("%s broke with %s: %s; retry %d of %d in %.1f s", self._describe(),
                     code.name, details, self._retries, MAX_RETRIES, self._backoff)
        backoff, self._backoff = self._backoff, self._backoff * BACKOFF_MULTIPLIER
        return backoff

    def calls(self):
        """(column range asked, with terminal prices) of each call that
        brings what is missing; the range is None for the first call of a
        request whose range only the server knows."""
        if self._span is None:
            return [(None, self._terminal_prices)]
        with_prices = self._prices_missing()
        missing = self._missing_columns(self._span)
        if not missing and with_prices:
            # Only the terminal prices are missing: one column carries them
            # (and its chunk, already here, is dropped).
            missing = [(self._span[0], self._span[0] + 1)]
        if len(missing) > 1 and self._targeted:
            # A targeted call sends the columns that meet the target first,
            # so what a broken one leaves is scattered: one call over the
            # span of the gaps (its columns here already are dropped), not
            # one per gap, as the C++ client does.
            missing = [(missing[0][0], missing[-1][1])]
        return [(asked, with_prices and k == 0) for k, asked in enumerate(missing)]

    def request(self, asked, with_prices):
        """The request of the next call; it begins now (with a new ring: what
        the server of a broken call wrote into the old one is not read)."""
        self._before = self._columns.copy()
        request = self._request
        if asked is not None:
            request.column_begin, request.column_end = asked
        request.output.terminal_prices = with_prices
        if self._shared_memory:
            self._close_ring()
            self._ring = SharedRing()
            self._ring.describe(request.output.shared_memory)
        return request

    def timeout(self):
        """The seconds left to the whole price() call, or None."""
        if self._deadline is None:
            return None
        timeout = self._deadline - time.monotonic()
        if timeout <= 0:
            raise PricerError(grpc.StatusCode.DEADLINE_EXCEEDED, "the timeout has passed")
        return timeout

    def check_complete(self, asked, with_prices):
        """The call says it is done: everything asked for must be here."""
        if self._span is None:
            raise contradiction("a finished call without an accepted reply")
        missing = self._missing_columns(asked or self._span)
        if missing:
            raise contradiction(f"a finished call without columns [{missing[0][0]}, "
                                f"{missing[0][1]})")
        if with_prices and self._prices_missing():
            raise contradiction("a finished call without all the terminal prices")

    def take(self, reply, asked):
        kind = reply.WhichOneof("kind")
        if kind == "accepted":
            accepted = reply.accepted
            if self._span is None:
                self._span = (accepted.column_begin, accepted.column_end)
            self._issuers = self._issuers or accepted.issuers
            self._results.accepted(accepted)
        elif kind == "chunk":
            self._take_chunk(reply.chunk, asked)
        elif kind == "prices":
            self._take_prices(reply.prices)
        elif kind == "round":
            self._results.round(reply.round)
        elif kind == "finished":
            self._results.finished(reply.finished)

    def _take_chunk(self, chunk, asked):
        begin, end = chunk.column_begin, chunk.column_end
        want = asked or self._span
        if want is None or begin < want[0] or end > want[1] or begin >= end:
            raise contradiction(f"a chunk of columns [{begin}, {end}) outside the columns "
                                "asked for")
        # A call may send again columns that arrived before it began (a
        # targeted call over the span of the gaps; the column asked for the
        # terminal prices): they are dropped. One that arrived during this
        # call, sent again, contradicts.
        if any(self._columns.overlaps(*gap) for gap in self._before.missing(begin, end)):
            raise contradiction(f"columns of [{begin}, {end}) twice")
        if chunk.shared_slot and self._ring is None:
            raise contradiction("a chunk in a shared-memory slot, and no ring was asked for")
        if not chunk.shared_slot:
            self._take_columns(chunk, begin, end)
            return
        with self._ring.take(chunk) as values:
            self._take_columns(chunk, begin, end, values)
        self._ring.release()

    def _take_columns(self, chunk, begin, end, values=None):
        """The chunk's columns that have not arrived."""
        for first, last in self._columns.missing(begin, end):
            self._results.chunk(chunk, first, last, values=values)
            self._columns.add(first, last)

    def _take_prices(self, prices):
        # A retry that asks for the prices again gets all of them: keep the
        # issuers that have not arrived.
        begin, end, rows = prices.issuer_begin, prices.issuer_end, prices.rows
        if not 0 <= begin < end <= self._issuers or \
                len(prices.values) != 4 * rows * (end - begin):
            raise contradiction(f"a terminal-prices chunk of issuers [{begin}, {end}) "
                                "that does not fit")
        for first, last in self._prices.missing(begin, end):
            values = prices.values[4 * rows * (first - begin):4 * rows * (last - begin)]
            self._results.prices(first, last, rows, values)
            self._prices.add(first, last)
