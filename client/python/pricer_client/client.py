"""The blocking client: a thin layer over the generated gRPC stubs that
speaks NumPy, over plain text or TLS, with an optional bearer token."""

import time
from typing import Callable, Iterable, Optional, Sequence, Tuple, Union

import grpc
import numpy as np

from pricer_client._book import Instruments
from pricer_client._calls import WarmUp, prepare_price, scenario_set_id, upload_chunks
from pricer_client._channel import Pem, open_channel
from pricer_client._errors import PricerError, from_rpc_error
from pricer_client._parts import run_parts
from pricer_client._proto import pricer_pb2, pricer_pb2_grpc
from pricer_client._protocol import CHANNEL, FIRST_BACKOFF_SECONDS, MAX_RETRIES, RETRYABLE_CODES
from pricer_client._results import PriceResult
from pricer_client._targets import Target

# What this module has always offered, wherever it is defined now.
__all__ = ["Client", "PriceResult", "PricerError", "Pem", "Target", "MAX_RETRIES",
           "FIRST_BACKOFF_SECONDS", "RETRYABLE_CODES"]

# Client.price's docstring (aio.Client.price's too), out of the function so
# that it stays within the 60 lines of tests/code_sizes_test.py.
_PRICE_DOC = """Prices one request.

The market: `spot` and `volatility` arrays, or `issuers` drawn as in
the original example (spot U(5,10), volatility U(0,1), keyed by seed).
The scenarios: an int M (generated U(0,1) columns keyed by seed), an
N x M array sent inline (K x M with a book), or `scenario_set`, an id
from upload().
`instruments`: a book of K instruments in place of the issuers' stocks,
valued on every path at the horizon (docs/risk.md, "Books and historical
scenarios"): a pandas DataFrame or a sequence of mappings (dicts), one
instrument a row, with `issuer` (its index in the market, from 0, or
its label when `spot` is a pandas Series indexed by labels),
`type` ("stock", "forward", "call" or "put", any case), `strike` and
`expiry` (years from today, >= maturity; both required but for a stock)
and optionally `volatility` (None or NaN: the issuer's); other columns
or keys are ignored. The result's `instruments` is K.
`returns`: historical scenarios in place of GBM paths, the issuers'
log-returns over the horizon (ST = S0 exp(R)): a P x N array (sent
inline as float32) or the id of a P x N set from upload(). `paths` may
then be left out (0: P). The server refuses antithetic, correlation and
a target with them.
`errors`: also each statistic's Monte Carlo error, right after it in
the result's statistics, named as the CLI's --errors columns:
"mean_se", "stddev_se", "es_L_se" (standard errors), "var_L_lo",
"var_L_hi", "quantile_L_lo", "quantile_L_hi" (the bounds of a
confidence interval at `error_confidence`, in (0, 1)); min, max: none.
`moments_from_covariance`: mean and stddev only, from ST's covariance.
`contributions`: items "es:L" and "var:L" (docs/risk.md, "Where the risk
comes from"): each row's (issuer's, or instrument's) Euler contribution to
the column's ES at L (they add up to it) or to VaR's window mean loss, in
the result's contributions["es_L"] (rows x columns, float32) and with
errors contributions["es_L_se"]; contributions_to_pandas() gives them in
long form. The level is added to `statistics` when they lack it.
`sensitivities`: "delta" and/or "vega", each issuer's pathwise
sensitivity of each contributed level to its spot or volatility, in
sensitivities["es_L"]["delta"] (issuers x columns, float32; with errors
"delta_se").
`target`: each column priced to a precision, a Target or the CLI's
--error-target text ("var:0.99=2%": var_0.99's error at most 2% of
it; "mean=0.01": at most 0.01), of an item of `statistics` (errors
implied): columns short of it are priced again with 2P, 4P, ...
paths, at most `max_paths`; the result's column_paths and target_met
say how each ended.
`full`: False; True (a new P x columns float32 array); a preallocated
float32 array of that shape (Fortran order keeps each chunk one
contiguous write); or a path, which becomes a memory-mapped .npy.
`shared_memory`: SC comes through a 32 MiB shared-memory ring of each
call's instead of the socket (docs/shared-memory.md): for a server on
this host, started with --shared-memory-output, which can open this
process's /proc/PID/fd (the same user, or root); Linux on x86-64. The
same values, without the kernel's two copies of each byte.
`split`: that many parts of the column range priced concurrently, round robin
over the servers of the target. A call that breaks is asked again for
the columns that have not arrived (see MAX_RETRIES, logged as a
warning of the "pricer_client.client" logger); the result is the same
bytes as an unbroken call. `timeout`: seconds for the whole price(),
retries included. `precision`: the lowest GEMM precision allowed,
"fp32", "tf32" or "bf16" (tensor cores on a GPU server; a cpu server
computes in fp32). `progress(columns_done, columns)`: called after
each chunk (from the parts' threads when split > 1).

Every argument is checked before any call: a wrong one raises
ValueError or TypeError naming it. A refused or failed call raises
PricerError (its code, the server's message, and the request field
the server named).
"""


class Client:
    """A connection to one server, or to several behind one gRPC target.

    `token`: sent as `authorization: Bearer <token>` with every call. `tls_ca`
    (the roots that verify the server; default the system roots), `tls_cert`
    and `tls_key` (this client's certificate and key, for a server that asks
    for one): PEM bytes or paths of PEM files. `tls_server_name`: the name to
    check in the server's certificate instead of the target's host. TLS is on
    when any tls_ argument is given.
    """

    def __init__(self, target: str = CHANNEL.default_target, token: Optional[str] = None,
                 tls_ca: Optional[Pem] = None, tls_cert: Optional[Pem] = None,
                 tls_key: Optional[Pem] = None, tls_server_name: Optional[str] = None,
                 options: Sequence[Tuple[str, Union[int, str]]] = ()):
        # Calls go round robin over every address the target resolves to
        # (e.g. "ipv4:127.0.0.1:50051,127.0.0.1:50052"), with keepalive pings
        # (client_protocol.proto's ChannelSettings). `options`: further gRPC
        # channel arguments, e.g. ("grpc.dns_min_time_between_resolutions_ms", 5000).
        self._channel, calls = open_channel(target, token, tls_ca, tls_cert, tls_key,
                                            tls_server_name, options)
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
            raise from_rpc_error(error) from None

    def _connect_to_every_server(self, parts):
        """Before the parts of a split start: see WarmUp."""
        grpc.channel_ready_future(self._channel).result(timeout=WarmUp.CONNECT_TIMEOUT_SECONDS)
        warm_up = WarmUp(parts)
        while (wait := warm_up.after(self.devices().server_id)) is not None:
            time.sleep(wait)

    def devices(self) -> pricer_pb2.ListDevicesReply:
        """The server's devices and their memory accounting."""
        return self._call(self._stub.ListDevices, pricer_pb2.ListDevicesRequest())

    def upload(self, matrix: np.ndarray, chunk_bytes: int = 1 << 20) -> str:
        """Stores an N x M matrix (any float dtype, any order) and returns its
        id, the SHA-256 the server computes (see ScenarioSet in the proto)."""
        return self._call(self._stub.UploadScenarios, upload_chunks(matrix, chunk_bytes)).id

    @staticmethod
    def scenario_set_id(matrix: np.ndarray) -> str:
        """The id the server gives `matrix`, computed locally."""
        return scenario_set_id(matrix)

    def price(self, *, paths: Optional[int] = None, seed: int = 0, rate: float = 0.0,
              maturity: float = 1.0,
              spot: Optional[Sequence[float]] = None, volatility: Optional[Sequence[float]] = None,
              issuers: Optional[int] = None, correlation: Optional[np.ndarray] = None,
              antithetic: bool = False, scenarios: Union[None, int, np.ndarray] = None,
              scenario_set: Optional[str] = None, column_begin: int = 0, column_end: int = 0,
              instruments: Optional[Instruments] = None,
              returns: Union[None, str, np.ndarray] = None,
              statistics: Optional[Iterable[str]] = ("mean", "stddev", "min", "max"),
              errors: bool = False, error_confidence: float = 0.95,
              moments_from_covariance: bool = False,
              contributions: Optional[Iterable[str]] = None,
              sensitivities: Optional[Iterable[str]] = None,
              target: Union[None, str, Target] = None, max_paths: Optional[int] = None,
              full: Union[bool, np.ndarray, str] = False, shared_memory: bool = False,
              terminal_prices: bool = False,
              priority: int = 0, precision: str = "fp32", split: int = 1,
              timeout: Optional[float] = None,
              progress: Optional[Callable[[int, int], None]] = None) -> PriceResult:
        # The arguments, by name: nothing else is defined yet.
        call = prepare_price(**{name: value for name, value in locals().items() if name != "self"})
        if call.parts > 1:
            self._connect_to_every_server(call.parts)
        run_parts(self._stub, call)
        return call.results.result()

    price.__doc__ = _PRICE_DOC
