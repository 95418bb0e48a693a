"""The PriceRequest of a price() call, from its arguments, each checked
before any call: a wrong argument raises TypeError or ValueError naming it."""

import decimal
import math
import numbers
import os
from typing import Sequence

import numpy as np

from pricer_client._proto import pricer_pb2
from pricer_client._protocol import SEED_PRESET

_PLAIN = ("mean", "stddev", "min", "max")
# Each levelled item, its field of StatisticsSelection, and whether its
# levels lie in the open interval (0, 1) (VaR, ES) or the closed one.
_LEVELLED = {"quantile": ("quantiles", False), "var": ("var", True), "es": ("es", True)}
# The errors each kind of item has with errors=True: (suffix of the name,
# field of LevelValues, or the plain statistic's field with "{kind}_"
# before it), in the order of the CSV's columns.
_ERRORS = {"mean": (("_se", "standard_error"),), "stddev": (("_se", "standard_error"),),
           "min": (), "max": (), "quantile": (("_lo", "lower"), ("_hi", "upper")),
           "var": (("_lo", "lower"), ("_hi", "upper")), "es": (("_se", "standard_error"),)}
_PRECISIONS = {"fp32": pricer_pb2.PRECISION_FP32, "tf32": pricer_pb2.PRECISION_TF32,
               "bf16": pricer_pb2.PRECISION_BF16}


def level_name(level: float) -> str:
    """The level as statistics names write it: the shortest decimal that
    reads back as the same double, in fixed notation (0.99, 0.975, 0.00001),
    as the CLI's CSV columns do."""
    return format(decimal.Decimal(repr(float(level))), "f")


def _integer(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} is {value}: must be {bound}")
    return int(value)


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} is {value}: must be finite")
    return float(value)


def _vector(name, values):
    a = np.asarray(values, dtype=np.float64) if values is not None else None
    if a is None or a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty sequence of numbers")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] is {a[bad[0]]}: must be finite")
    return a


def statistics_selection(items: Sequence[str]):
    """The StatisticsSelection for items such as "mean", "var:0.99"; and
    (name, kind, level, "values") per item, named as the CLI's CSV columns
    ("var_0.99"). The same item twice ("var:.99", "var:0.990") is refused."""
    if isinstance(items, str):
        raise TypeError(f"statistics must be a list of items, not the string {items!r}")
    selection, named, given = pricer_pb2.StatisticsSelection(), [], {}
    for item in items:
        kind, _, text = str(item).strip().partition(":")
        if kind in _PLAIN and not text:
            setattr(selection, kind, True)
            name, level = kind, None
        elif kind in _LEVELLED and text:
            try:
                level = float(text)
            except ValueError:
                raise ValueError(f"statistics item {item!r}: the level {text!r} is not a "
                                 "number") from None
            field, open_interval = _LEVELLED[kind]
            inside = 0 < level < 1 if open_interval else 0 <= level <= 1
            if not inside:
                raise ValueError(f"statistics item {item!r}: the level must be in "
                                 f"{'(0, 1)' if open_interval else '[0, 1]'}")
            getattr(selection, field).append(level)
            name = f"{kind}_{level_name(level)}"
        else:
            raise ValueError(f"statistics item {item!r} is not one of mean, stddev, min, max, "
                             "quantile:L, var:L, es:L")
        if name in given:
            raise ValueError(f"statistics items {given[name]!r} and {item!r} are the same "
                             f"item ({name})")
        given[name] = item
        named.append((name, kind, level, "values"))
    if not named:
        raise ValueError("statistics is empty: give None for no statistics")
    return selection, named


def with_errors(named):
    """Each (name, kind, level, "values") of `named` followed by its errors,
    as the CLI's --errors names them: mean, mean_se, var_0.99, var_0.99_lo,
    var_0.99_hi, ...; the part is a field of LevelValues ("lower", "upper",
    "standard_error"), for mean and stddev "standard_error"."""
    columns = []
    for name, kind, level, part in named:
        columns.append((name, kind, level, part))
        columns.extend((name + suffix, kind, level, error) for suffix, error in _ERRORS[kind])
    return columns


def _errors_and_confidence(errors, error_confidence):
    if not isinstance(errors, bool):
        raise TypeError(f"errors must be True or False, not {errors!r}")
    if isinstance(error_confidence, bool) or not isinstance(error_confidence, numbers.Real):
        raise TypeError(f"error_confidence must be a number, not {error_confidence!r}")
    if not 0 < error_confidence < 1:  # NaN fails too
        raise ValueError(f"error_confidence is {error_confidence}: must be in (0, 1)")
    return float(error_confidence)


def _set_market(request, spot, volatility, issuers, seed, correlation):
    if (spot is None) != (volatility is None):
        missing = "volatility" if volatility is None else "spot"
        raise ValueError(f"{missing} is missing: spot and volatility go together")
    if spot is not None:
        if issuers is not None:
            raise ValueError("give spot and volatility, or issuers, not both")
        spot, volatility = _vector("spot", spot), _vector("volatility", volatility)
        if spot.size != volatility.size:
            raise ValueError(f"spot has {spot.size} values, volatility {volatility.size}: "
                             "one of each per issuer")
        request.market.explicit.spot.extend(spot)
        request.market.explicit.volatility.extend(volatility)
        count = spot.size
    elif issuers is not None:
        count = _integer("issuers", issuers, 1)
        # Drawn as in the original example.
        generated = request.market.generated
        generated.issuers, generated.seed = count, seed
        generated.spot_min, generated.spot_max = SEED_PRESET.spot_min, SEED_PRESET.spot_max
        generated.volatility_min = SEED_PRESET.volatility_min
        generated.volatility_max = SEED_PRESET.volatility_max
    else:
        raise ValueError("no market: give spot and volatility, or issuers")
    if correlation is not None:
        c = np.asarray(correlation, dtype=np.float64)
        if c.shape != (count, count):
            raise ValueError(f"correlation has shape {c.shape}: must be {(count, count)}, "
                             "one row and column per issuer")
        request.market.correlation.extend(c.ravel())
    return count


def _set_scenarios(request, scenarios, scenario_set, seed, issuers):
    if scenario_set is not None and scenarios is not None:
        raise ValueError("give scenarios or scenario_set, not both")
    if scenario_set is not None:
        if not isinstance(scenario_set, str) or not scenario_set:
            raise TypeError(f"scenario_set must be an id from upload(), not {scenario_set!r}")
        request.scenarios.scenario_set = scenario_set
    elif isinstance(scenarios, numbers.Integral) and not isinstance(scenarios, bool):
        generated = request.scenarios.generated
        generated.columns, generated.seed = _integer("scenarios", scenarios, 1), seed
        generated.value_min = SEED_PRESET.scenario_value_min
        generated.value_max = SEED_PRESET.scenario_value_max
    elif scenarios is not None:
        a = np.asarray(scenarios)
        if a.ndim != 2 or a.shape[0] != issuers or a.shape[1] == 0:
            raise ValueError(f"scenarios has shape {a.shape}: must be ({issuers}, M), one row "
                             "per issuer")
        request.scenarios.matrix.rows, request.scenarios.matrix.columns = a.shape
        request.scenarios.matrix.values = np.asfortranarray(a, dtype="<f4").tobytes(order="F")
    else:
        raise ValueError("no scenarios: give scenarios (a count or a matrix) or scenario_set")


def _check_full(full):
    if isinstance(full, (bool, np.ndarray, str, os.PathLike)):
        return
    raise TypeError(f"full must be False, True, a float32 array or a path, not {full!r}")


def price_request(*, paths, seed, rate, maturity, spot, volatility, issuers, correlation,
                  antithetic, scenarios, scenario_set, column_begin, column_end, statistics,
                  errors, error_confidence, full, terminal_prices, priority, precision):
    """(the PriceRequest of Client.price()'s arguments, (name, kind, level,
    part) of each statistics column: with errors, each item's errors after
    it)."""
    if precision not in _PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of fp32, tf32, bf16")
    _check_full(full)
    error_confidence = _errors_and_confidence(errors, error_confidence)
    request = pricer_pb2.PriceRequest(
        paths=_integer("paths", paths, 1), seed=_integer("seed", seed, 0, 2**64 - 1),
        rate=_number("rate", rate), maturity=_number("maturity", maturity),
        column_begin=_integer("column_begin", column_begin, 0),
        column_end=_integer("column_end", column_end, 0), antithetic=bool(antithetic),
        priority=_integer("priority", priority, -100, 100),
        precision=_PRECISIONS[precision])
    if request.maturity <= 0:
        raise ValueError(f"maturity is {maturity}: must be > 0 years")
    if 0 < request.column_end <= request.column_begin:
        raise ValueError(f"column_end is {column_end}: must be above column_begin "
                         f"{column_begin} (or 0: the last column)")
    issuers = _set_market(request, spot, volatility, issuers, request.seed, correlation)
    _set_scenarios(request, scenarios, scenario_set, request.seed, issuers)
    named = []
    if statistics is not None:
        selection, named = statistics_selection(statistics)
        if errors:
            selection.errors, selection.error_confidence = True, error_confidence
            named = with_errors(named)
        request.output.statistics.CopyFrom(selection)
    elif errors:
        raise ValueError("errors=True needs statistics (the errors are theirs)")
    request.output.full = full is not False
    request.output.terminal_prices = bool(terminal_prices)
    if not (named or request.output.full or request.output.terminal_prices):
        raise ValueError("nothing to return: give statistics, full or terminal_prices")
    return request, named


def column_span(request):
    """The request's column range, unless only the server knows it (a
    scenario set without column_end): None."""
    source = request.scenarios
    begin = request.column_begin
    end = request.column_end or (
        source.matrix.columns if source.HasField("matrix") else
        source.generated.columns if source.HasField("generated") else 0)
    return (begin, end) if end > begin else None
