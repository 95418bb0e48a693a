"""A thin client over the generated gRPC stubs that speaks NumPy."""

import concurrent.futures
import dataclasses
import hashlib
from typing import Dict, Iterable, Optional, Sequence, Union

import grpc
import numpy as np

from pricer.v1 import pricer_pb2, pricer_pb2_grpc

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


class Client:
    """A connection to one server, or to several behind one gRPC target."""

    def __init__(self, target: str = "localhost:50051"):
        # Calls go round robin over every address the target resolves to
        # (e.g. "ipv4:127.0.0.1:50051,127.0.0.1:50052"), so the parts of a
        # split request spread over the servers.
        self._channel = grpc.insecure_channel(
            target, options=[("grpc.lb_policy_name", "round_robin")])
        self._stub = pricer_pb2_grpc.PricerStub(self._channel)

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
        """
        request = pricer_pb2.PriceRequest(paths=paths, seed=seed, rate=rate, maturity=maturity,
                                          column_begin=column_begin, column_end=column_end,
                                          antithetic=antithetic, priority=priority)
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

        if split > 1:
            return self._price_split(request, named, full, split, timeout)
        try:
            return self._collect(self._stub.Price(request, timeout=timeout), named, full)
        except grpc.RpcError as error:
            raise PricerError(error.code(), error.details()) from None

    def _price_split(self, request, named, full, split, timeout) -> PriceResult:
        scenarios = request.scenarios
        columns = (scenarios.matrix.columns if scenarios.HasField("matrix") else
                   scenarios.generated.columns if scenarios.HasField("generated") else 0)
        begin = request.column_begin
        end = request.column_end or columns
        if end <= begin:
            raise ValueError("split needs the column range: give column_end with scenario_set")
        split = min(split, end - begin)
        bounds = [begin + (end - begin) * k // split for k in range(split + 1)]
        shape = (request.paths, end - begin)
        if isinstance(full, str):
            whole = np.lib.format.open_memmap(full, mode="w+", dtype=np.float32, shape=shape,
                                              fortran_order=True)
        elif isinstance(full, np.ndarray) or full:
            whole = full if isinstance(full, np.ndarray) else np.empty(shape, np.float32, "F")
        else:
            whole = None
        # Round robin picks among connected servers: connect before the parts.
        grpc.channel_ready_future(self._channel).result(timeout=10)
        for _ in range(split):
            self.devices()

        def part(k):
            one = pricer_pb2.PriceRequest()
            one.CopyFrom(request)
            one.column_begin, one.column_end = bounds[k], bounds[k + 1]
            one.output.terminal_prices = request.output.terminal_prices and k == 0
            view = False if whole is None else whole[:, bounds[k] - begin:bounds[k + 1] - begin]
            try:
                return self._collect(self._stub.Price(one, timeout=timeout), named, view)
            except grpc.RpcError as error:
                raise PricerError(error.code(), error.details()) from None

        with concurrent.futures.ThreadPoolExecutor(max_workers=split) as pool:
            parts = list(pool.map(part, range(split)))
        statistics = {name: np.concatenate([p.statistics[name] for p in parts])
                      for name in parts[0].statistics}
        if isinstance(whole, np.memmap):
            whole.flush()
        return PriceResult(begin, end, parts[0].paths, parts[0].issuers, statistics, whole,
                           parts[0].terminal_prices, max(p.elapsed_seconds for p in parts),
                           sum(p.flops for p in parts))

    @staticmethod
    def _collect(replies, named, full) -> PriceResult:
        result = None
        for reply in replies:
            kind = reply.WhichOneof("kind")
            if kind == "accepted":
                accepted = reply.accepted
                columns = accepted.column_end - accepted.column_begin
                shape = (accepted.paths, columns)
                if isinstance(full, str):
                    sc = np.lib.format.open_memmap(full, mode="w+", dtype=np.float32,
                                                   shape=shape, fortran_order=True)
                elif isinstance(full, np.ndarray):
                    if full.shape != shape or full.dtype != np.float32:
                        raise ValueError(f"full must be a float32 array of shape {shape}")
                    sc = full
                elif full:
                    sc = np.empty(shape, dtype=np.float32, order="F")
                else:
                    sc = None
                result = PriceResult(
                    accepted.column_begin, accepted.column_end, accepted.paths, accepted.issuers,
                    {name: np.full(columns, np.nan) for name in ["v0"] + [n for n, _, _ in named]},
                    sc, None, 0.0, 0.0)
            elif kind == "chunk":
                chunk = reply.chunk
                first = chunk.column_begin - result.column_begin
                count = chunk.column_end - chunk.column_begin
                window = slice(first, first + count)
                if result.full is not None and chunk.values:
                    result.full[:, window] = np.frombuffer(chunk.values, dtype="<f4").reshape(
                        (count, chunk.rows)).T
                if chunk.HasField("statistics"):
                    s = chunk.statistics
                    result.statistics["v0"][window] = s.v0
                    for name, kind_, level in named:
                        values = getattr(s, kind_) if level is None else _levels(s, kind_)[level]
                        result.statistics[name][window] = values
            elif kind == "prices":
                prices = reply.prices
                if result.terminal_prices is None:
                    result.terminal_prices = np.empty((result.paths, result.issuers),
                                                      dtype=np.float32, order="F")
                count = prices.issuer_end - prices.issuer_begin
                result.terminal_prices[:, prices.issuer_begin:prices.issuer_end] = np.frombuffer(
                    prices.values, dtype="<f4").reshape((count, prices.rows)).T
            elif kind == "finished":
                result.elapsed_seconds = reply.finished.elapsed_seconds
                result.flops = reply.finished.flops
        if isinstance(result.full, np.memmap):
            result.full.flush()
        return result
