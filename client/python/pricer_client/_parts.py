"""The parts of a price() call and their retries (docs/retry-protocol.md):
each part calls until every column of its range, and the terminal prices
when it asks for them, have arrived, asking a broken call's successor only
for what is still missing."""

import concurrent.futures
import logging
import time

import grpc

from pricer.v1 import pricer_pb2
from pricer_client._errors import PricerError, contradiction
from pricer_client._protocol import (BACKOFF_MULTIPLIER, FIRST_BACKOFF_SECONDS, MAX_RETRIES,
                                     RETRYABLE_CODES)

# The logger the retries are reported to, as documented (client/python/README.md).
_log = logging.getLogger("pricer_client.client")


class Ranges:
    """A set of column (or issuer) indices kept as merged half-open ranges."""

    def __init__(self):
        self._ranges = []  # sorted, disjoint, never adjacent
        self.count = 0

    def add(self, begin, end):
        if begin >= end:
            return
        kept = []
        for first, last in self._ranges:
            if last < begin or first > end:
                kept.append((first, last))
            else:  # overlaps or touches: absorb it
                begin, end = min(begin, first), max(end, last)
                self.count -= last - first
        kept.append((begin, end))
        self._ranges = sorted(kept)
        self.count += end - begin

    def missing(self, begin, end):
        """The ranges of [begin, end) not in the set, in order."""
        gaps, at = [], begin
        for first, last in self._ranges:
            if last <= at or first >= end:
                continue
            if first > at:
                gaps.append((at, first))
            at = max(at, last)
        if at < end:
            gaps.append((at, end))
        return gaps

    def overlaps(self, begin, end):
        return any(first < end and begin < last for first, last in self._ranges)


def run_parts(stub, request, span, parts, results, deadline):
    """Prices `request` in `parts` parts of its column range `span` (None:
    one part, the range learned from `accepted`), concurrently, into
    `results` (a Results); raises the first failed part's PricerError."""

    def part(k):
        piece = None if span is None else (span[0] + (span[1] - span[0]) * k // parts,
                                            span[0] + (span[1] - span[0]) * (k + 1) // parts)
        # Every part computes the same ST; the first sends it.
        terminal_prices = request.output.terminal_prices and k == 0
        Part(stub, request, piece, terminal_prices, results, deadline).run()

    if parts == 1:
        part(0)
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=parts) as pool:
            list(pool.map(part, range(parts)))


class Part:
    """One column range of a request and what has arrived of it."""

    def __init__(self, stub, request, span, terminal_prices, results, deadline):
        self._stub, self._results, self._deadline = stub, results, deadline
        self._request = pricer_pb2.PriceRequest()
        self._request.CopyFrom(request)
        self._span = span  # None: the request's own range, learned from `accepted`
        self._terminal_prices = terminal_prices
        output = request.output
        # False for a request of terminal prices only: no chunk comes.
        self._columns_wanted = output.full or output.HasField("statistics") or not terminal_prices
        self._columns, self._prices = Ranges(), Ranges()
        self._issuers = 0

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

    def run(self):
        retries, backoff = 0, FIRST_BACKOFF_SECONDS
        while True:
            before = self._columns.count + self._prices.count
            try:
                self._call_for_missing()
                return
            except grpc.RpcError as error:
                code, details = error.code(), error.details()
            if code not in RETRYABLE_CODES:
                raise PricerError(code, details)
            if self._complete():
                return  # it broke after the last column
            # A call that brought something new restarts the count: a long
            # job survives several outages, one that cannot progress stops.
            if self._columns.count + self._prices.count > before:
                retries, backoff = 0, FIRST_BACKOFF_SECONDS
            if retries == MAX_RETRIES:
                raise PricerError(code, details)
            retries += 1
            _log.warning("%s broke with %s: %s; retry %d of %d in %.1f s", self._describe(),
                         code.name, details, retries, MAX_RETRIES, backoff)
            time.sleep(backoff)
            backoff *= BACKOFF_MULTIPLIER

    def _call_for_missing(self):
        if self._span is None:
            self._call(None, self._terminal_prices)
            return
        with_prices = self._prices_missing()
        missing = self._missing_columns(self._span)
        if not missing and with_prices:
            # Only the terminal prices are missing: one column carries them
            # (and its chunk, already here, is dropped).
            missing = [(self._span[0], self._span[0] + 1)]
        for asked in missing:
            self._call(asked, with_prices)
            with_prices = False

    def _call(self, asked, with_prices):
        request = self._request
        if asked is not None:
            request.column_begin, request.column_end = asked
        request.output.terminal_prices = with_prices
        timeout = None
        if self._deadline is not None:
            timeout = self._deadline - time.monotonic()
            if timeout <= 0:
                raise PricerError(grpc.StatusCode.DEADLINE_EXCEEDED, "the timeout has passed")
        call = self._stub.Price(request, timeout=timeout)
        try:
            for reply in call:
                self._take(reply, asked)
        except grpc.RpcError:
            raise
        except BaseException:
            call.cancel()  # our own error: stop the job
            raise
        # The call says it is done: everything asked for must be here.
        if self._span is None:
            raise contradiction("a finished call without an accepted reply")
        missing = self._missing_columns(asked or self._span)
        if missing:
            raise contradiction(f"a finished call without columns [{missing[0][0]}, "
                                f"{missing[0][1]})")
        if with_prices and self._prices_missing():
            raise contradiction("a finished call without all the terminal prices")

    def _take(self, reply, asked):
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
        elif kind == "finished":
            self._results.finished(reply.finished)

    def _take_chunk(self, chunk, asked):
        begin, end = chunk.column_begin, chunk.column_end
        want = asked or self._span
        if want is None or begin < want[0] or end > want[1] or begin >= end:
            raise contradiction(f"a chunk of columns [{begin}, {end}) outside the columns "
                                "asked for")
        if not self._columns.missing(begin, end):
            return  # only carried the terminal prices
        if self._columns.overlaps(begin, end):
            raise contradiction(f"columns of [{begin}, {end}) twice")
        self._results.chunk(chunk)
        self._columns.add(begin, end)

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
