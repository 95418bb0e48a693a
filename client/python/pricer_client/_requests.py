"""The PriceRequest of a price() call, from its arguments, each checked
before any call: a wrong argument raises TypeError or ValueError naming it."""

import numbers
import os

import numpy as np

from pricer_client._book import market_labels, set_instruments, set_returns
from pricer_client._checks import number as _number
from pricer_client._proto import pricer_pb2
from pricer_client._protocol import SEED_PRESET
from pricer_client._statistics import contribution_levels, statistics_selection, with_errors
from pricer_client._targets import as_target, precision_target

_PRECISIONS = {"fp32": pricer_pb2.PRECISION_FP32, "tf32": pricer_pb2.PRECISION_TF32,
               "bf16": pricer_pb2.PRECISION_BF16}


def _integer(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} is {value}: must be {bound}")
    return int(value)


def _vector(name, values):
    a = np.asarray(values, dtype=np.float64) if values is not None else None
    if a is None or a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty sequence of numbers")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] is {a[bad[0]]}: must be finite")
    return a


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


def _paths(paths, returns):
    """The request's paths: required (>= 1) for GBM paths; with historical
    returns 0 (the default: the returns' rows) or their rows."""
    if paths is None:
        if returns is None:
            raise TypeError("paths is missing: give the number of paths (only historical "
                            "returns give their own)")
        return 0
    return _integer("paths", paths, 1 if returns is None else 0)


def _set_scenarios(request, scenarios, scenario_set, seed, rows):
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
        if a.ndim != 2 or a.shape[0] != rows or a.shape[1] == 0:
            per = "instrument" if request.instruments else "issuer"
            raise ValueError(f"scenarios has shape {a.shape}: must be ({rows}, M), one row "
                             f"per {per}")
        request.scenarios.matrix.rows, request.scenarios.matrix.columns = a.shape
        request.scenarios.matrix.values = np.asfortranarray(a, dtype="<f4").tobytes(order="F")
    else:
        raise ValueError("no scenarios: give scenarios (a count or a matrix) or scenario_set")


def _check_full(full):
    if isinstance(full, (bool, np.ndarray, str, os.PathLike)):
        return
    raise TypeError(f"full must be False, True, a float32 array or a path, not {full!r}")


def _set_target(request, named, target, max_paths):
    """request.target, from price()'s `target` (a Target, or None) and
    `max_paths`; the statistics columns `named` must hold the target's."""
    if target is None:
        if max_paths is not None:
            raise ValueError(f"max_paths is {max_paths!r}: it needs a target")
        return
    if not any(kind == target.statistic and level == target.level
               for _, kind, level, _ in named):
        raise ValueError(f"target {target.item} is not among statistics: add "
                         f"{target.item!r} to them")
    if max_paths is None:
        raise ValueError("max_paths is missing: a target needs the most paths a column may use")
    if _integer("max_paths", max_paths, 1) < request.paths:
        raise ValueError(f"max_paths is {max_paths}: must be >= paths ({request.paths})")
    for name in ("full", "terminal_prices"):
        if getattr(request.output, name):
            raise ValueError(f"{name} is not available with a target: its columns are priced "
                             "with different numbers of paths")
    request.target.CopyFrom(precision_target(target, int(max_paths)))


def _set_sensitivities(selection, sensitivities, contributions):
    """selection.delta and vega from price()'s `sensitivities`."""
    if sensitivities is None:
        return
    if isinstance(sensitivities, str):
        raise TypeError(f"sensitivities must be a list of items, not the string "
                        f"{sensitivities!r}")
    if contributions is None:
        raise ValueError("sensitivities are those of the contributed levels: give contributions")
    for item in sensitivities:
        if item not in ("delta", "vega"):
            raise ValueError(f"sensitivities item {item!r} is not delta or vega")
        setattr(selection, item, True)


def price_request(*, paths, seed, rate, maturity, spot, volatility, issuers, correlation,
                  antithetic, scenarios, scenario_set, column_begin, column_end, instruments,
                  returns, statistics, errors, error_confidence, moments_from_covariance, full,
                  terminal_prices, priority, precision, target, max_paths, contributions=None,
                  sensitivities=None):
    """(the PriceRequest of Client.price()'s arguments, (name, kind, level,
    part) of each statistics column: with errors or a target, each item's
    errors after it, the names of the contributed levels in the server's
    order)."""
    if precision not in _PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of fp32, tf32, bf16")
    _check_full(full)
    target = None if target is None else as_target(target)
    error_confidence = _errors_and_confidence(errors, error_confidence)
    request = pricer_pb2.PriceRequest(
        paths=_paths(paths, returns), seed=_integer("seed", seed, 0, 2**64 - 1),
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
    set_returns(request, returns, issuers)
    rows = set_instruments(request, instruments, issuers, market_labels(spot))
    _set_scenarios(request, scenarios, scenario_set, request.seed, rows)
    named, contributed = [], []
    if moments_from_covariance and statistics == ("mean", "stddev", "min", "max"):
        statistics = ("mean", "stddev")  # the default, less what ST's covariance cannot give
    if statistics is not None:
        selection, named = statistics_selection(statistics)
        if contributions is not None:
            contributed, added = contribution_levels(selection, contributions)
            named += added
        _set_sensitivities(selection, sensitivities, contributions)
        selection.moments_from_covariance = bool(moments_from_covariance)
        if errors or target is not None:  # a target's error is one of them
            selection.errors, selection.error_confidence = True, error_confidence
            named = with_errors(named)
        request.output.statistics.CopyFrom(selection)
    elif errors:
        raise ValueError("errors=True needs statistics (the errors are theirs)")
    elif contributions is not None:
        raise ValueError("contributions needs statistics (they are ES's and VaR's)")
    request.output.full = full is not False
    request.output.terminal_prices = bool(terminal_prices)
    _set_target(request, named, target, max_paths)
    if not (named or request.output.full or request.output.terminal_prices):
        raise ValueError("nothing to return: give statistics, full or terminal_prices")
    return request, named, contributed


def column_span(request):
    """The request's column range, unless only the server knows it (a
    scenario set without column_end): None."""
    source = request.scenarios
    begin = request.column_begin
    end = request.column_end or (
        source.matrix.columns if source.HasField("matrix") else
        source.generated.columns if source.HasField("generated") else 0)
    return (begin, end) if end > begin else None


def request_paths(request):
    """P, unless only the server knows it (historical returns from a stored
    set, with paths 0): None."""
    if request.paths or not request.HasField("returns"):
        return request.paths
    returns = request.returns
    return returns.matrix.rows if returns.HasField("matrix") else None
