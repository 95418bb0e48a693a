"""What the blocking and the asyncio clients share around their calls: a
price() call prepared from its arguments, the split warm-up's decisions, and
the scenario set id."""

import dataclasses
import hashlib
import numbers
import time
from typing import Callable, Optional, Tuple

import numpy as np

from pricer_client._proto import pricer_pb2
from pricer_client._protocol import SPLIT_WARM_UP
from pricer_client._requests import column_span, price_request, request_paths
from pricer_client._results import Results
from pricer_client._ring import check_supported


@dataclasses.dataclass
class PreparedPrice:
    """A price() call, checked and ready: its request, its column range (None
    when only the server knows it), its parts, where the results go, its
    deadline on time.monotonic() (or None), and whether SC comes through a
    shared-memory ring."""

    request: pricer_pb2.PriceRequest
    span: Optional[Tuple[int, int]]
    parts: int
    results: Results
    deadline: Optional[float]
    shared_memory: bool = False


def prepare_price(*, split: int = 1, timeout: Optional[float] = None,
                  progress: Optional[Callable[[int, int], None]] = None, full=False,
                  shared_memory: bool = False, **arguments) -> PreparedPrice:
    """Checks price()'s arguments (ValueError or TypeError naming the
    argument) and builds its request, before any call."""
    request, named, contributed = price_request(full=full, **arguments)
    if isinstance(split, bool) or not isinstance(split, numbers.Integral) or split < 1:
        raise ValueError(f"split is {split!r}: must be an integer >= 1")
    if timeout is not None and (isinstance(timeout, bool) or
                                not isinstance(timeout, numbers.Real) or not timeout > 0):
        raise ValueError(f"timeout is {timeout!r}: must be seconds > 0, or None")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable (columns done, columns), not {progress!r}")
    if not isinstance(shared_memory, bool):
        raise TypeError(f"shared_memory must be True or False, not {shared_memory!r}")
    if shared_memory:
        if full is False:
            raise ValueError("shared_memory needs full: it is the way SC comes")
        check_supported()
    span = column_span(request)
    if span is None and split > 1:
        raise ValueError("split needs the column range: give column_end with scenario_set")
    paths = request_paths(request)
    if isinstance(full, np.ndarray) and span is not None and paths is not None:
        shape = (paths, span[1] - span[0])
        if full.shape != shape or full.dtype != np.float32:
            raise ValueError(f"full is a {full.dtype} array of shape {full.shape}: must be "
                             f"float32 of shape {shape} (paths, columns)")
    parts = 1 if span is None else max(1, min(int(split), span[1] - span[0]))
    deadline = None if timeout is None else time.monotonic() + timeout
    max_paths = request.target.max_paths if request.HasField("target") else None
    selection = request.output.statistics
    sensitivities = [name for name in ("delta", "vega") if getattr(selection, name)]
    results = Results(named, full, span, progress, max_paths,
                      contributed=(contributed, selection.errors, sensitivities))
    return PreparedPrice(request, span, parts, results, deadline, shared_memory)


class WarmUp:
    """Round robin picks among the servers it is connected to, and
    connections come up one by one: before the parts of a split start, the
    client calls ListDevices until no new server (ListDevicesReply.server_id)
    has answered for `parts` calls (at least twice the servers seen) and
    50 ms, at most 2 s (client_protocol.proto's SplitWarmUp), as the C++
    client does. This says, after each answer, how long to wait before the
    next call, or None: the parts may start."""

    CONNECT_TIMEOUT_SECONDS = SPLIT_WARM_UP.connect_timeout_ms / 1000

    def __init__(self, parts):
        self._parts = parts
        self._servers, self._quiet = set(), 0
        self._start = self._last_new = time.monotonic()

    def after(self, server_id) -> Optional[float]:
        now = time.monotonic()
        if now - self._start >= SPLIT_WARM_UP.max_wait_ms / 1000:
            return None
        if server_id not in self._servers:
            self._servers.add(server_id)
            self._quiet, self._last_new = 0, now
            return 0.0
        self._quiet += 1
        if self._quiet < max(self._parts,
                             SPLIT_WARM_UP.quiet_calls_per_server * len(self._servers)):
            return 0.0
        if now - self._last_new >= SPLIT_WARM_UP.quiet_ms / 1000:
            return None
        return SPLIT_WARM_UP.poll_interval_ms / 1000


def upload_chunks(matrix: np.ndarray, chunk_bytes: int):
    """The ScenarioChunks that upload an N x M matrix (any float dtype, any
    order); checked before any call."""
    a = np.asarray(matrix)
    if a.ndim != 2 or 0 in a.shape:
        raise ValueError(f"matrix has shape {a.shape}: must be a non-empty 2-D array (N, M)")
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, numbers.Integral) or \
            chunk_bytes < 1:
        raise ValueError(f"chunk_bytes is {chunk_bytes!r}: must be an integer >= 1")
    data = np.asfortranarray(a, dtype="<f4").tobytes(order="F")

    def chunks():
        for offset in range(0, len(data), chunk_bytes):
            chunk = pricer_pb2.ScenarioChunk(values=data[offset:offset + chunk_bytes])
            if offset == 0:
                chunk.rows, chunk.columns = a.shape
            yield chunk

    return chunks()


def scenario_set_id(matrix: np.ndarray) -> str:
    """The id the server gives `matrix` (see ScenarioSet in the proto)."""
    a = np.asfortranarray(np.asarray(matrix), dtype="<f4")
    digest = hashlib.sha256()
    digest.update(np.array(a.shape, dtype="<i8").tobytes())
    digest.update(a.tobytes(order="F"))
    return digest.hexdigest()
