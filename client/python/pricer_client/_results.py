"""The arrays of one price() call, filled by the replies of all its calls."""

import dataclasses
import os
import threading
from typing import Callable, Dict, Optional

import numpy as np

from pricer_client._errors import contradiction


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

    def to_pandas(self):
        """The statistics as a pandas DataFrame: one row per priced column,
        indexed by the column's number ("column"), one column per statistic
        (v0 first). Needs pandas (pip install "pricer-client[pandas]")."""
        try:
            import pandas
        except ImportError:
            raise ImportError("PriceResult.to_pandas() needs pandas: pip install "
                              "'pricer-client[pandas]' (or pandas)") from None
        index = pandas.RangeIndex(self.column_begin, self.column_end, name="column")
        return pandas.DataFrame(self.statistics, index=index)

    def write_csv(self, path):
        """Writes the statistics as the CLI's --stats-out does: a header
        `column,v0,<statistic>,...`, then one row per column, each value the
        shortest decimal that reads back as the same float64."""
        names = list(self.statistics)
        with open(os.fspath(path), "w") as out:
            out.write(",".join(["column", *names]) + "\n")
            for k in range(self.column_end - self.column_begin):
                row = [repr(float(self.statistics[name][k])) for name in names]
                out.write(",".join([str(self.column_begin + k), *row]) + "\n")


def _values(statistics, kind, level, part):
    """One statistics column's array in a chunk's ColumnStatistics: a
    statistic's values or one of its errors (`part`, see
    _requests.with_errors); None when the chunk lacks the level."""
    if level is None:
        return getattr(statistics, kind if part == "values" else f"{kind}_{part}")
    field = {"quantile": statistics.quantiles, "var": statistics.var, "es": statistics.es}[kind]
    for entry in field:
        if entry.level == level:
            return getattr(entry, part)
    return None


def _full_array(full, shape):
    """Where SC goes: a memory-mapped .npy at the path `full`, the array
    `full`, a new array (True), or nowhere (False: None)."""
    if isinstance(full, (str, os.PathLike)):
        return np.lib.format.open_memmap(full, mode="w+", dtype=np.float32, shape=shape,
                                         fortran_order=True)
    if isinstance(full, np.ndarray):
        if full.shape != shape or full.dtype != np.float32:
            raise ValueError(f"full must be a float32 array of shape {shape}")
        return full
    if full:
        return np.empty(shape, dtype=np.float32, order="F")
    return None


class Results:
    """The arrays of one price() call, filled by the replies of all its calls
    (parts and retries; thread-safe). `named`: (name, kind, level, part) of
    each statistics column (_requests.price_request); `span`: the whole
    column range, or None to take it from the first `accepted`;
    `progress(columns done, columns)`: called after each chunk, or None."""

    def __init__(self, named, full, span,
                 progress: Optional[Callable[[int, int], None]] = None):
        self._named, self._full, self._span = named, full, span
        self._progress = progress
        self._lock = threading.Lock()
        self._result = None
        self._columns_done = 0

    def accepted(self, accepted):
        with self._lock:
            r = self._result
            if r is not None:  # another part, or a retry: the same model, inside the range
                if (accepted.paths, accepted.issuers) != (r.paths, r.issuers) or \
                        accepted.column_begin < r.column_begin or \
                        accepted.column_end > r.column_end:
                    raise contradiction("calls of one request with different shapes")
                return
            begin, end = self._span or (accepted.column_begin, accepted.column_end)
            sc = _full_array(self._full, (accepted.paths, end - begin))
            names = ["v0"] + [name for name, *_ in self._named]
            self._result = PriceResult(begin, end, accepted.paths, accepted.issuers,
                                       {name: np.full(end - begin, np.nan) for name in names},
                                       sc, None, 0.0, 0.0)

    def _started(self):
        if self._result is None:
            raise contradiction("results before the accepted reply")
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
                self._take_statistics(r, chunk.statistics, window)
            self._columns_done += chunk.column_end - chunk.column_begin
            done, total = self._columns_done, r.column_end - r.column_begin
        if self._progress is not None:
            self._progress(done, total)

    def _take_statistics(self, r, statistics, window):
        count = window.stop - window.start
        for name, kind, level, part in [("v0", "v0", None, "values"), *self._named]:
            values = _values(statistics, kind, level, part)
            if values is None or len(values) != count:
                raise contradiction(f"no {name} for {count} columns")
            r.statistics[name][window] = values

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
