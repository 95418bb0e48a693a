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

    paths: P, the paths of every column (with a target: of the first round)
    statistics: name -> array over the priced columns ("v0", "mean", "var_0.99", ...)
    full: the SC matrix (P x columns, float32), when requested
    terminal_prices: ST (P x N, float32), when requested
    column_paths: with a target, the paths each column was priced with
        (int64, P x 2^k), else None
    target_met: with a target, whether each column's error met it (bool;
        False: max_paths came first), else None
    instruments: K, the instruments of the request's book (0 without one)
    contributions: name ("es_0.975", "var_0.99", with errors "es_0.975_se")
        -> the Euler contributions of A's rows to each priced column (rows x
        columns, float32, rows in the market's or the book's order)
    sensitivities: name -> {"delta", "vega" (with errors "delta_se", "vega_se")
        -> issuers x columns float32}, of each contributed level
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
    column_paths: Optional[np.ndarray] = None
    target_met: Optional[np.ndarray] = None
    instruments: int = 0
    contributions: Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    sensitivities: Dict[str, Dict[str, np.ndarray]] = dataclasses.field(default_factory=dict)

    def _columns(self):
        """(name, values, how a value is written) of each column after
        `column`, as the CLI's CSV has them: with a target, the statistics
        then `paths` and `target_met` (1 or 0)."""
        columns = [(name, values, lambda v: repr(float(v)))
                   for name, values in self.statistics.items()]
        if self.column_paths is not None:
            columns += [("paths", self.column_paths, lambda v: str(int(v))),
                        ("target_met", self.target_met, lambda v: str(int(v)))]
        return columns

    def to_pandas(self):
        """The statistics as a pandas DataFrame: one row per priced column,
        indexed by the column's number ("column"), one column per statistic
        (v0 first), then with a target `paths` and `target_met`. Needs pandas
        (pip install "pricer-client[pandas]")."""
        try:
            import pandas
        except ImportError:
            raise ImportError("PriceResult.to_pandas() needs pandas: pip install "
                              "'pricer-client[pandas]' (or pandas)") from None
        index = pandas.RangeIndex(self.column_begin, self.column_end, name="column")
        return pandas.DataFrame({name: values for name, values, _ in self._columns()},
                                index=index)

    def contributions_to_pandas(self):
        """The contributions and sensitivities in long form, a row per
        (column, row, item): columns `column` (the scenario column's number),
        `row` (the instrument's or issuer's index; the issuer's for a
        sensitivity), `item` ("es_0.975", "es_0.975_se", "es_0.975_delta",
        ...) and `value`. Needs pandas."""
        try:
            import pandas
        except ImportError:
            raise ImportError("PriceResult.contributions_to_pandas() needs pandas: pip install "
                              "'pricer-client[pandas]' (or pandas)") from None
        frames = []
        items = dict(self.contributions)
        for name, parts in self.sensitivities.items():
            items.update({f"{name}_{part}": values for part, values in parts.items()})
        for item, values in items.items():
            rows, columns = values.shape
            frames.append(pandas.DataFrame({
                "column": np.tile(np.arange(self.column_begin, self.column_begin + columns),
                                  rows),
                "row": np.repeat(np.arange(rows), columns),
                "item": item,
                "value": values.ravel(order="C")}))
        if not frames:
            return pandas.DataFrame(columns=["column", "row", "item", "value"])
        return pandas.concat(frames, ignore_index=True)

    def write_csv(self, path):
        """Writes the statistics as the CLI's --stats-out does: a header
        `column,v0,<statistic>,...` (with a target `...,paths,target_met`),
        then one row per column, each statistic the shortest decimal that
        reads back as the same float64."""
        columns = self._columns()
        with open(os.fspath(path), "w") as out:
            out.write(",".join(["column", *(name for name, *_ in columns)]) + "\n")
            for k in range(self.column_end - self.column_begin):
                row = [write(values[k]) for _, values, write in columns]
                out.write(",".join([str(self.column_begin + k), *row]) + "\n")


def _values(statistics, kind, level, part):
    """One statistics column's array in a chunk's ColumnStatistics: a
    statistic's values or one of its errors (`part`, see
    _statistics.with_errors); None when the chunk lacks the level."""
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
    `progress(columns done, columns)`: called after each chunk, or None;
    `max_paths`: a targeted request's (its chunks come in any order, each
    with the paths its columns were priced with), or None."""

    def __init__(self, named, full, span,
                 progress: Optional[Callable[[int, int], None]] = None,
                 max_paths: Optional[int] = None, contributed=((), False, ())):
        self._named, self._full, self._span = named, full, span
        # The contributed levels' names in the server's order, whether
        # their errors come too, and their sensitivities ("delta", "vega").
        self._contributed, self._contribution_errors, self._sensitivities = contributed
        self._progress, self._max_paths = progress, max_paths
        self._lock = threading.Lock()
        self._result = None
        self._columns_done = 0

    def accepted(self, accepted):
        if accepted.paths < 1:
            raise contradiction(f"an accepted reply of {accepted.paths} paths")
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
                                       sc, None, 0.0, 0.0, instruments=accepted.instruments)
            rows = accepted.instruments or accepted.issuers
            for name in self._contributed:
                for item in [name] + ([name + "_se"] if self._contribution_errors else []):
                    self._result.contributions[item] = np.full((rows, end - begin), np.nan,
                                                               dtype=np.float32, order="F")
                self._result.sensitivities[name] = {
                    part: np.full((accepted.issuers, end - begin), np.nan, dtype=np.float32,
                                  order="F")
                    for what in self._sensitivities
                    for part in [what] + ([what + "_se"] if self._contribution_errors else [])}
            if self._max_paths is not None:
                self._result.column_paths = np.zeros(end - begin, dtype=np.int64)
                self._result.target_met = np.zeros(end - begin, dtype=bool)

    def _started(self):
        if self._result is None:
            raise contradiction("results before the accepted reply")
        return self._result

    def chunk(self, chunk, begin=None, end=None, *, values=None):
        """Columns [begin, end) of `chunk` (default all of them: a call may
        send some that have arrived already, see _parts); `values`: its SC
        values where a shared-memory slot holds them (default the reply's)."""
        values = chunk.values if values is None else values
        if begin is None:
            begin, end = chunk.column_begin, chunk.column_end
        with self._lock:
            r = self._started()
            self._check_rows(r, chunk)
            count = chunk.column_end - chunk.column_begin
            # The columns taken, in the chunk's arrays and in the result's.
            part = slice(begin - chunk.column_begin, end - chunk.column_begin)
            window = slice(begin - r.column_begin, end - r.column_begin)
            if r.full is not None and len(values):
                r.full[:, window] = np.frombuffer(values, dtype="<f4").reshape(
                    (count, chunk.rows))[part].T
            if chunk.HasField("statistics"):
                self._take_statistics(r, chunk.statistics, count, part, window)
            self._take_contributions(r, chunk, count, part, window)
            if self._max_paths is not None:
                self._take_target(r, chunk, count, part, window)
            self._columns_done += end - begin
            done, total = self._columns_done, r.column_end - r.column_begin
        if self._progress is not None:
            self._progress(done, total)

    def _take_statistics(self, r, statistics, count, part, window):
        for name, kind, level, field in [("v0", "v0", None, "values"), *self._named]:
            values = _values(statistics, kind, level, field)
            if values is None or len(values) != count:
                raise contradiction(f"no {name} for {count} columns")
            r.statistics[name][window] = values[part]

    def _take_contributions(self, r, chunk, count, part, window):
        if len(chunk.contributions) != len(self._contributed):
            raise contradiction(f"{len(chunk.contributions)} contributed levels for "
                                f"{len(self._contributed)} asked for")
        for name, c in zip(self._contributed, chunk.contributions):
            blocks = [(r.contributions, name, c.rows, c.values),
                      (r.contributions, name + "_se", c.rows, c.standard_errors)]
            blocks += [(r.sensitivities[name], what, c.issuers, getattr(c, field))
                       for what, field in (("delta", "delta"), ("delta_se", "delta_standard_errors"),
                                           ("vega", "vega"), ("vega_se", "vega_standard_errors"))]
            for to, item, sent_rows, values in blocks:
                if item not in to:
                    continue
                rows = to[item].shape[0]
                if sent_rows != rows or len(values) != 4 * rows * count:
                    raise contradiction(f"{name} {item} of {sent_rows} rows in {len(values)} "
                                        f"bytes for {count} columns of {rows} rows")
                to[item][:, window] = np.frombuffer(values, dtype="<f4").reshape(
                    (count, rows))[part].T

    def _check_rows(self, r, chunk):
        """A chunk's rows are the paths of its columns: P, or with a target
        P x 2^k <= max_paths."""
        rows, doublings = chunk.rows, chunk.rows // r.paths
        if self._max_paths is None:
            if rows == r.paths:
                return
        elif rows % r.paths == 0 and r.paths <= rows <= self._max_paths and \
                not doublings & (doublings - 1):
            return
        targeted = self._max_paths is not None
        raise contradiction(f"a chunk of columns [{chunk.column_begin}, {chunk.column_end}) of "
                            f"{rows} rows for {r.paths} paths" +
                            (f" (not {r.paths} x 2^k <= {self._max_paths})" if targeted else ""))

    def round(self, started):
        """A round of a targeted request starts: P x 2^round paths."""
        with self._lock:
            r = self._started()
            if self._max_paths is None or started.round < 0 or \
                    started.paths != r.paths << started.round or started.paths > self._max_paths:
                raise contradiction(f"a round {started.round} of {started.paths} paths that the "
                                    "request does not have")

    def _take_target(self, r, chunk, count, part, window):
        met = chunk.statistics.target_met
        if len(met) != count:
            raise contradiction(f"no target_met for {count} columns")
        r.column_paths[window] = chunk.rows
        r.target_met[window] = met[part]

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
