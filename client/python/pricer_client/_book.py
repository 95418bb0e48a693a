"""A price() call's book (`instruments`, PriceRequest.instruments) and
historical scenarios (`returns`, PriceRequest.returns), checked before any
call: a wrong one raises TypeError or ValueError naming the parameter and,
for a book, the row (docs/risk.md, "Books and historical scenarios")."""

import math
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Sequence, Union

import numpy as np

from pricer_client._checks import number
from pricer_client._proto import book_pb2, pricer_pb2

if TYPE_CHECKING:  # pandas stays optional: a DataFrame is only read through its methods
    import pandas

# What `instruments` may be: a DataFrame, or a sequence of mappings (dicts),
# one instrument a row, with `issuer`, `type`, `strike`, `expiry` and
# optionally `volatility` (other columns or keys are ignored).
Instruments = Union["pandas.DataFrame", Sequence[Mapping[str, Any]]]

_TYPES = {"stock": book_pb2.Instrument.TYPE_STOCK, "forward": book_pb2.Instrument.TYPE_FORWARD,
          "call": book_pb2.Instrument.TYPE_CALL, "put": book_pb2.Instrument.TYPE_PUT}


def _rows(instruments):
    """The instruments one mapping a row: a DataFrame's rows (position k is
    instruments[k], whatever its index), or the sequence's items."""
    if hasattr(instruments, "columns") and hasattr(instruments, "to_dict"):  # a DataFrame
        return instruments.to_dict("records")
    if isinstance(instruments, (str, bytes, Mapping)) or not isinstance(instruments, Sequence):
        raise TypeError("instruments must be a pandas DataFrame or a sequence of mappings "
                        f"(dicts), one a row, not {instruments!r}")
    for k, row in enumerate(instruments):
        if not isinstance(row, Mapping):
            raise TypeError(f"instruments[{k}] must be a mapping (a dict) with issuer, type, "
                            f"strike, expiry, not {row!r}")
    return instruments


def _missing(value):
    """Whether a cell is empty: absent, None, or NaN (pandas' empty cell)."""
    return value is None or (isinstance(value, numbers.Real) and not isinstance(value, bool)
                             and math.isnan(value))


def _issuer(where, value, issuers, labels):
    """An issuer's index from its index or, with `labels` (a labelled
    market's {label: index}), its label."""
    if isinstance(value, str):
        if value in labels:
            return labels[value]
        if not labels:
            raise ValueError(f"{where}.issuer is {value!r}: the market has no labels to resolve "
                             "it against (give spot as a pandas Series indexed by label), or "
                             "give the issuer's index from 0")
        raise ValueError(f"{where}.issuer is {value!r}: not a label of the market (spot's "
                         "index)")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}.issuer must be an issuer's index (an integer), not {value!r}")
    if not 0 <= value < issuers:
        raise ValueError(f"{where}.issuer is {value}: must be in [0, {issuers - 1}], the index "
                         f"of one of the market's {issuers} issuers")
    return int(value)


def market_labels(spot):
    """{label: index} of a market whose spot is a pandas Series with string
    labels (its index); {} otherwise."""
    index = getattr(spot, "index", None)
    if index is None or callable(index):  # a list's index() is a method
        return {}
    labels = {label: k for k, label in enumerate(index) if isinstance(label, str)}
    return labels if len(labels) == len(index) else {}


def _kind(where, value):
    kind = _TYPES.get(value.lower()) if isinstance(value, str) else None
    if kind is None:
        raise ValueError(f"{where}.type is {value!r}: must be stock, forward, call or put")
    return kind


def _instrument(where, row, issuers, labels):
    """One row as an Instrument; the server checks the ranges of strike,
    expiry (>= maturity) and volatility, naming the field."""
    for name in ("issuer", "type"):
        if _missing(row.get(name)):
            raise ValueError(f"{where}.{name} is missing")
    kind = _kind(where, row["type"])
    instrument = book_pb2.Instrument(issuer=_issuer(where, row["issuer"], issuers, labels),
                                     type=kind)
    if kind != book_pb2.Instrument.TYPE_STOCK:  # a stock's strike and expiry are ignored
        for name in ("strike", "expiry"):
            if _missing(row.get(name)):
                raise ValueError(f"{where}.{name} is missing: a {row['type'].lower()} needs "
                                 "one")
            setattr(instrument, name, number(f"{where}.{name}", row[name]))
    if not _missing(row.get("volatility")):
        instrument.volatility = number(f"{where}.volatility", row["volatility"])
    return instrument


def set_instruments(request: pricer_pb2.PriceRequest, instruments, issuers: int,
                    labels=None) -> int:
    """request.instruments from price()'s `instruments` (None: the issuers'
    stocks) on a market of `issuers`, labelled by `labels` (market_labels)
    when it is; the rows the scenario matrix needs: one per instrument, or
    per issuer without a book."""
    if instruments is None:
        return issuers
    rows = _rows(instruments)
    if len(rows) == 0:
        raise ValueError("instruments is empty: give at least one instrument, or None for the "
                         "issuers' stocks")
    request.instruments.extend(_instrument(f"instruments[{k}]", row, issuers, labels or {})
                               for k, row in enumerate(rows))
    return len(rows)


def set_returns(request: pricer_pb2.PriceRequest, returns, issuers: int):
    """request.returns from price()'s `returns`: a P x N array (sent
    inline as float32, column-major) or the id of an uploaded set; None:
    GBM paths. Checks `paths` (0 or P) against an inline array."""
    if returns is None:
        return
    if isinstance(returns, str):
        if not returns:
            raise ValueError("returns is '': must be a set id from upload() or a P x N array")
        request.returns.scenario_set = returns
        return
    try:
        r = np.asfortranarray(returns, dtype="<f4")
    except (TypeError, ValueError):
        raise TypeError("returns must be a 2-D array of log-returns (P x N) or a set id from "
                        f"upload(), not {returns!r}") from None
    if r.ndim != 2 or r.shape[0] == 0 or r.shape[1] != issuers:
        raise ValueError(f"returns has shape {r.shape}: must be (P, {issuers}), one row per "
                         "scenario, one column per issuer")
    bad = np.argwhere(~np.isfinite(r))
    if bad.size:
        raise ValueError(f"returns[{bad[0][0]}, {bad[0][1]}] is {r[tuple(bad[0])]}: must be "
                         "finite (in float32)")
    if request.paths not in (0, r.shape[0]):
        raise ValueError(f"paths is {request.paths}: must be 0 or the returns' rows "
                         f"({r.shape[0]})")
    matrix = request.returns.matrix
    matrix.rows, matrix.columns = r.shape
    matrix.values = r.tobytes(order="F")
