"""A thin client over the generated gRPC stubs that speaks NumPy, over plain
text or TLS, with an optional bearer token."""

import collections
import concurrent.futures
import dataclasses
import hashlib
import logging
import os
import threading
import time
from typing import Dict, Iterable, Optional, Sequence, Tuple, Union

import grpc
import numpy as np

from pricer.v1 import pricer_pb2, pricer_pb2_grpc

# A call that breaks (the server killed or cut off, a stream reset, a shard
# that failed on every device of that server) is asked again for the columns
# that have not arrived, up to MAX_RETRIES times in a row without progress,
# after 0.2 s, 0.4 s, 0.8 s; round robin sends it to a server that is still
# up. A refused request (INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED,
# ...) is not retried: it would be refused again.
MAX_RETRIES = 3
FIRST_BACKOFF_SECONDS = 0.2
RETRYABLE_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL,
                             grpc.StatusCode.UNKNOWN, grpc.StatusCode.ABORTED,
                             grpc.StatusCode.CANCELLED})

_log = logging.getLogger(__name__)

_PLAIN = ("mean", "stddev", "min", "max")
_LEVELLED = ("quantile", "var", "es")


class PricerError(Exception):
    """A call the server refused or that failed: the gRPC code and message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


@dataclasses.dataclass
class PriceResult:
    """What one price call returned.

    statistics: name -> array over the priced columns ("v0", "mean", "var_0.99", ...)
    full: the SC matrix (P x columns, float32), when requested
    terminal_prices: ST (P x N, float32), when requested
    """

    column_begin: int
    column_end: int
    paths: int
    issuers: int
    statistics: Dict[str, np.ndarray]
    full: Optional[np.ndarray]
    terminal_prices: Optional[np.ndarray]
    elapsed_seconds: float
    flops: float


def _selection(items: Sequence[str]):
    """The StatisticsSelection for items such as "mean", "var:0.99"; and
    (name, kind, level) per item, named as the CLI's CSV columns."""
    selection = pricer_pb2.StatisticsSelection()
    named = []
    for item in items:
        kind, _, level = item.partition(":")
        if kind in _PLAIN and not level:
            setattr(selection, kind, True)
            named.append((kind, kind, None))
        elif kind in _LEVELLED and level:
            getattr(selection, {"quantile": "quantiles"}.get(kind, kind)).append(float(level))
            named.append((f"{kind}_{level}", kind, float(level)))
        else:
            raise ValueError(f"statistics item {item!r} is not one of mean, stddev, min, max, "
                             "quantile:L, var:L, es:L")
    return selection, named


def _levels(statistics, kind):
    field = {"quantile": statistics.quantiles, "var": statistics.var, "es": statistics.es}[kind]
    return {entry.level: entry.values for entry in field}


# A PEM argument: the PEM bytes, or the path of a PEM file.
Pem = Union[str, os.PathLike, bytes]


def _pem(name: str, value: Optional[Pem]) -> Optional[bytes]:
    """The PEM bytes of `value`; an error names `name` (the parameter) and
    the path."""
    if value is None:
        return None
    pem, source = value, "the bytes given"
    if not isinstance(value, bytes):
        source = os.fspath(value)
        try:
            with open(source, "rb") as f:
                pem = f.read()
        except OSError as error:
            raise OSError(error.errno, f"{name}: cannot read {source}: {error.strerror}") from None
    if b"-----BEGIN " not in pem:
        raise ValueError(f"{name}: {source} is not PEM (no -----BEGIN line)")
    return pem


class _CallDetails(
        collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials",
                                                "wait_for_ready", "compression")),
        grpc.ClientCallDetails):
    pass


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                   grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds `authorization: Bearer <token>` to every call on a channel: the
    one place for devices(), upload() and every part and retry of price().
    Metadata rather than call credentials, which gRPC sends only over TLS:
    a token must work on a plain-text channel too."""

    def __init__(self, token: str):
        self._authorization = ("authorization", "Bearer " + token)

    def _intercept(self, continuation, details, request):
        metadata = [*(details.metadata or ()), self._authorization]
        return continuation(_CallDetails(details.method, details.timeout, metadata,
                                         details.credentials, details.wait_for_ready,
                                         details.compression), request)

    intercept_unary_unary = intercept_unary_stream = _intercept
    intercept_stream_unary = intercept_stream_stream = _intercept


class Client:
    """A connection to one server, or to several behind one gRPC target.

    `token`: sent as `authorization: Bearer <token>` with every call. `tls_ca`
    (the roots that verify the server; default the system roots), `tls_cert`
    and `tls_key` (this client's certificate and key, for a server that asks
    for one): PEM bytes or paths of PEM files. `tls_server_name`: the name to
    check in the server's certificate instead of the target's host. TLS is on
    when any tls_ argument is given.
    """

    def __init__(self, target: str = "localhost:50051", token: Optional[str] = None,
                 tls_ca: Optional[Pem] = None, tls_cert: Optional[Pem] = None,
                 tls_key: Optional[Pem] = None, tls_server_name: Optional[str] = None,
                 options: Sequence[Tuple[str, Union[int, str]]] = ()):
        # Calls go round robin over every address the target resolves to
        # (e.g. "ipv4:127.0.0.1:50051,127.0.0.1:50052"), so the parts of a
        # split request spread over the servers. A ping every 10 s during a
        # call finds a server whose host or link went away (no RST arrives),
        # so that its part is retried elsewhere. `options`: further gRPC
        # channel arguments, e.g. ("grpc.dns_min_time_between_resolutions_ms", 5000).
        options = [("grpc.lb_policy_name", "round_robin"),
                   ("grpc.keepalive_time_ms", 10000), ("grpc.keepalive_timeout_ms", 5000),
                   ("grpc.http2.max_pings_without_data", 0), *options]
        if any(value is not None for value in (tls_ca, tls_cert, tls_key, tls_server_name)):
            if (tls_cert is None) != (tls_key is None):
                raise ValueError("tls_cert and tls_key go together: a client certificate "
                                 "needs its private key")
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_pem("tls_ca", tls_ca),
                private_key=_pem("tls_key", tls_key),
                certificate_chain=_pem("tls_cert", tls_cert))
            if tls_server_name is not None:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
            self._channel = grpc.secure_channel(target, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(target, options=options)
        calls = grpc.intercept_channel(self._channel, _BearerToken(token)) if token else \
            self._channel
        self._stub = pricer_pb2_grpc.PricerStub(calls)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, *args):
        try:
            return method(*args)
        except grpc.RpcError as error:
            raise PricerError(error.code(), error.details()) from None

    def _connect_to_every_server(self, parts):
        """Round robin picks among the servers it is connected to, and
        connections come up one by one: before the parts of a split start,
        ListDevices until no new server (ListDevicesReply.server_id) has
        answered for `parts` calls (at least twice the servers seen) and
        50 ms, at most 2 s, as the C++ client does."""
        grpc.channel_ready_future(self._channel).result(timeout=10)
        servers, quiet = set(), 0
        start = last_new = time.monotonic()
        while time.monotonic() - start < 2.0:
            server = self.devices().server_id
            if server not in servers:
                servers.add(server)
                quiet, last_new = 0, time.monotonic()
                continue
            quiet += 1
            if quiet >= max(parts, 2 * len(servers)):
                if time.monotonic() - last_new >= 0.05:
                    return
                time.sleep(0.005)

    def devices(self) -> pricer_pb2.ListDevicesReply:
        """The server's devices and their memory accounting."""
        return self._call(self._stub.ListDevices, pricer_pb2.ListDevicesRequest())

    def upload(self, matrix: np.ndarray, chunk_bytes: int = 1 << 20) -> str:
        """Stores an N x M matrix (any float dtype, any order) and returns its
        id, the SHA-256 the server computes (see ScenarioSet in the proto)."""
        a = np.asarray(matrix)
        if a.ndim != 2:
            raise ValueError(f"the scenario matrix must be 2-D, not shape {a.shape}")
        data = np.asfortranarray(a, dtype="<f4").tobytes(order="F")
        rows, columns = a.shape

        def chunks():
            for offset in range(0, len(data), chunk_bytes):
                chunk = pricer_pb2.ScenarioChunk(values=data[offset:offset + chunk_bytes])
                if offset == 0:
                    chunk.rows, chunk.columns = rows, columns
                yield chunk

        return self._call(self._stub.UploadScenarios, chunks()).id

    @staticmethod
    def scenario_set_id(matrix: np.ndarray) -> str:
        """The id the server gives `matrix`, computed locally."""
        a = np.asfortranarray(np.asarray(matrix), dtype="<f4")
        digest = hashlib.sha256()
        digest.update(np.array(a.shape, dtype="<i8").tobytes())
        digest.update(a.tobytes(order="F"))
        return digest.hexdigest()

    def price(self, *, paths: int, seed: int = 0, rate: float = 0.0, maturity: float = 1.0,
              spot: Optional[Sequence[float]] = None,
              volatility: Optional[Sequence[float]] = None,
              issuers: Optional[int] = None,
              correlation: Optional[np.ndarray] = None,
              antithetic: bool = False,
              scenarios: Union[None, int, np.ndarray] = None,
              scenario_set: Optional[str] = None,
              column_begin: int = 0, column_end: int = 0,
              statistics: Optional[Iterable[str]] = ("mean", "stddev", "min", "max"),
              full: Union[bool, np.ndarray, str] = False,
              terminal_prices: bool = False,
              priority: int = 0,
              precision: str = "fp32",
              split: int = 1,
              timeout: Optional[float] = None) -> PriceResult:
        """Prices one request.

        The market: `spot` and `volatility` arrays, or `issuers` drawn as in
        the original example (spot U(5,10), volatility U(0,1), keyed by seed).
        The scenarios: an int M (generated U(0,1) columns keyed by seed), an
        N x M array sent inline, or `scenario_set`, an id from upload().
        `full`: False; True (a new P x columns float32 array); a preallocated
        float32 array of that shape (Fortran order keeps each chunk one
        contiguous write); or a path, which becomes a memory-mapped .npy.
        `split`: K parts of the column range priced concurrently, round robin
        over the servers of the target. A call that breaks is asked again for
        the columns that have not arrived (see MAX_RETRIES, logged as a
        warning of the "pricer_client.client" logger); the result is the same
        bytes as an unbroken call. `timeout`: seconds for the whole price(),
        retries included. `precision`: the lowest GEMM precision allowed,
        "fp32", "tf32" or "bf16" (tensor cores on a GPU server; a cpu server
        computes in fp32).
        """
        precisions = {"fp32": pricer_pb2.PRECISION_FP32, "tf32": pricer_pb2.PRECISION_TF32,
                      "bf16": pricer_pb2.PRECISION_BF16}
        if precision not in precisions:
            raise ValueError(f"precision {precision!r} is not one of fp32, tf32, bf16")
        request = pricer_pb2.PriceRequest(paths=paths, seed=seed, rate=rate, maturity=maturity,
                                          column_begin=column_begin, column_end=column_end,
                                          antithetic=antithetic, priority=priority,
                                          precision=precisions[precision])
        if spot is not None:
            request.market.explicit.spot.extend(float(s) for s in spot)
            request.market.explicit.volatility.extend(float(v) for v in volatility)
        elif issuers is not None:
            generated = request.market.generated
            generated.issuers, generated.seed = issuers, seed
            generated.spot_min, generated.spot_max = 5.0, 10.0
            generated.volatility_min, generated.volatility_max = 0.0, 1.0
        else:
            raise ValueError("give spot and volatility, or issuers")
        if correlation is not None:
            request.market.correlation.extend(np.asarray(correlation, dtype=float).ravel())
        if scenario_set is not None:
            request.scenarios.scenario_set = scenario_set
        elif isinstance(scenarios, (int, np.integer)):
            request.scenarios.generated.columns = int(scenarios)
            request.scenarios.generated.seed = seed
            request.scenarios.generated.value_min = 0.0
            request.scenarios.generated.value_max = 1.0
        elif scenarios is not None:
            a = np.asarray(scenarios)
            request.scenarios.matrix.rows, request.scenarios.matrix.columns = a.shape
            request.scenarios.matrix.values = np.asfortranarray(a, dtype="<f4").tobytes(order="F")
        else:
            raise ValueError("give scenarios (a count or a matrix) or scenario_set")

        named = []
        if statistics:
            selection, named = _selection(list(statistics))
            request.output.statistics.CopyFrom(selection)
        request.output.full = full is not False
        request.output.terminal_prices = terminal_prices

        source = request.scenarios
        begin = request.column_begin
        end = request.column_end or (
            source.matrix.columns if source.HasField("matrix") else
            source.generated.columns if source.HasField("generated") else 0)
        # The column range, unless only the server knows it (a scenario set).
        span = (begin, end) if end > begin else None
        if span is None and split > 1:
            raise ValueError("split needs the column range: give column_end with scenario_set")
        parts = 1 if span is None else max(1, min(split, end - begin))
        if parts > 1:
            self._connect_to_every_server(parts)
        results = _Results(named, full, span)
        deadline = None if timeout is None else time.monotonic() + timeout

        def part(k):
            piece = None if span is None else (begin + (end - begin) * k // parts,
                                                begin + (end - begin) * (k + 1) // parts)
            # Every part computes the same ST; the first sends it.
            _Part(self._stub, request, piece, terminal_prices and k == 0, results,
                  deadline).run()

        if parts == 1:
            part(0)
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=parts) as pool:
                list(pool.map(part, range(parts)))
        return results.result()


def _contradiction(what):
    return PricerError(grpc.StatusCode.INTERNAL, "the server sent " + what)


class _Ranges:
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


class _Results:
    """The arrays of one price() call, filled by the replies of all its calls
    (parts and retries; thread-safe). `span`: the whole column range, or
    None to take it from the first `accepted`."""

    def __init__(self, named, full, span):
        self._named, self._full, self._span = named, full, span
        self._lock = threading.Lock()
        self._result = None

    def accepted(self, accepted):
        with self._lock:
            r = self._result
            if r is not None:  # another part, or a retry: the same model, inside the range
                if (accepted.paths, accepted.issuers) != (r.paths, r.issuers) or \
                        accepted.column_begin < r.column_begin or \
                        accepted.column_end > r.column_end:
                    raise _contradiction("calls of one request with different shapes")
                return
            begin, end = self._span or (accepted.column_begin, accepted.column_end)
            shape = (accepted.paths, end - begin)
            full = self._full
            if isinstance(full, str):
                sc = np.lib.format.open_memmap(full, mode="w+", dtype=np.float32, shape=shape,
                                               fortran_order=True)
            elif isinstance(full, np.ndarray):
                if full.shape != shape or full.dtype != np.float32:
                    raise ValueError(f"full must be a float32 array of shape {shape}")
                sc = full
            elif full:
                sc = np.empty(shape, dtype=np.float32, order="F")
            else:
                sc = None
            names = ["v0"] + [name for name, _, _ in self._named]
            self._result = PriceResult(begin, end, accepted.paths, accepted.issuers,
                                       {name: np.full(end - begin, np.nan) for name in names},
                                       sc, None, 0.0, 0.0)

    def _started(self):
        if self._result is None:
            raise _contradiction("results before the accepted reply")
        return self._result

    def chunk(self, chunk):
        with self._lock:
            r = self._started()
            first = chunk.column_begin - r.column_begin
            window = slice(first, first + chunk.column_end - chunk.column_begin)
            if r.full is not None and chunk.values:
                r.full[:, window] = np.frombuffer(chunk.values, dtype="<f4").reshape(
                    (chunk.column_end - chunk.column_begin, chunk.rows)).T
            if chunk.HasField("statistics"):
                s = chunk.statistics
                r.statistics["v0"][window] = s.v0
                for name, kind, level in self._named:
                    r.statistics[name][window] = (getattr(s, kind) if level is None
                                                  else _levels(s, kind)[level])

    def prices(self, begin, end, rows, values):
        with self._lock:
            r = self._started()
            if r.terminal_prices is None:
                r.terminal_prices = np.empty((r.paths, r.issuers), dtype=np.float32, order="F")
            r.terminal_prices[:, begin:end] = np.frombuffer(values, dtype="<f4").reshape(
                (end - begin, rows)).T

    def finished(self, finished):
        # Parts add up: work sums, the wall time is the longest call's.
        with self._lock:
            r = self._started()
            r.elapsed_seconds = max(r.elapsed_seconds, finished.elapsed_seconds)
            r.flops += finished.flops

    def result(self):
        if isinstance(self._result.full, np.memmap):
            self._result.full.flush()
        return self._result


class _Part:
    """One column range of a request and what has arrived of it: calls until
    every column, and the terminal prices when this part asks for them, have
    arrived, asking a broken call's successor only for what is missing."""

    def __init__(self, stub, request, span, terminal_prices, results, deadline):
        self._stub, self._results, self._deadline = stub, results, deadline
        self._request = pricer_pb2.PriceRequest()
        self._request.CopyFrom(request)
        self._span = span  # None: the request's own range, learned from `accepted`
        self._terminal_prices = terminal_prices
        output = request.output
        # False for a request of terminal prices only: no chunk comes.
        self._columns_wanted = output.full or output.HasField("statistics") or not terminal_prices
        self._columns, self._prices = _Ranges(), _Ranges()
        self._issuers = 0

    def _prices_missing(self):
        return self._terminal_prices and (
            self._issuers == 0 or bool(self._prices.missing(0, self._issuers)))

    def _missing_columns(self, span):
        return self._columns.missing(*span) if self._columns_wanted else []

    def _complete(self):
        return (self._span is not None and not self._missing_columns(self._span)
                and not self._prices_missing())

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
            if self._span is None:
                what = "the call"
            else:
                missing = sum(b - a for a, b in self._missing_columns(self._span))
                what = f"columns [{self._span[0]}, {self._span[1]}) ({missing} missing)"
            _log.warning("%s broke with %s: %s; retry %d of %d in %.1f s", what, code.name,
                         details, retries, MAX_RETRIES, backoff)
            time.sleep(backoff)
            backoff *= 2

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
            raise _contradiction("a finished call without an accepted reply")
        want = asked or self._span
        missing = self._missing_columns(want)
        if missing:
            raise _contradiction(f"a finished call without columns [{missing[0][0]}, "
                                 f"{missing[0][1]})")
        if with_prices and self._prices_missing():
            raise _contradiction("a finished call without all the terminal prices")

    def _take(self, reply, asked):
        kind = reply.WhichOneof("kind")
        if kind == "accepted":
            accepted = reply.accepted
            if self._span is None:
                self._span = (accepted.column_begin, accepted.column_end)
            self._issuers = self._issuers or accepted.issuers
            self._results.accepted(accepted)
        elif kind == "chunk":
            chunk = reply.chunk
            begin, end = chunk.column_begin, chunk.column_end
            want = asked or self._span
            if want is None or begin < want[0] or end > want[1] or begin >= end:
                raise _contradiction(f"a chunk of columns [{begin}, {end}) outside the columns "
                                     "asked for")
            if not self._columns.missing(begin, end):
                return  # only carried the terminal prices
            if self._columns.overlaps(begin, end):
                raise _contradiction(f"columns of [{begin}, {end}) twice")
            self._results.chunk(chunk)
            self._columns.add(begin, end)
        elif kind == "prices":
            # A retry that asks for the prices again gets all of them: keep
            # the issuers that have not arrived.
            prices = reply.prices
            begin, end, rows = prices.issuer_begin, prices.issuer_end, prices.rows
            if not 0 <= begin < end <= self._issuers or \
                    len(prices.values) != 4 * rows * (end - begin):
                raise _contradiction(f"a terminal-prices chunk of issuers [{begin}, {end}) "
                                     "that does not fit")
            for first, last in self._prices.missing(begin, end):
                values = prices.values[4 * rows * (first - begin):4 * rows * (last - begin)]
                self._results.prices(first, last, rows, values)
                self._prices.add(first, last)
        elif kind == "finished":
            self._results.finished(reply.finished)
