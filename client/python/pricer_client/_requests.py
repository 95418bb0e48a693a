"""The PriceRequest of a price() call, from its arguments."""

from typing import Sequence

import numpy as np

from pricer.v1 import pricer_pb2
from pricer_client._protocol import SEED_PRESET

_PLAIN = ("mean", "stddev", "min", "max")
_LEVELLED = ("quantile", "var", "es")
_PRECISIONS = {"fp32": pricer_pb2.PRECISION_FP32, "tf32": pricer_pb2.PRECISION_TF32,
               "bf16": pricer_pb2.PRECISION_BF16}


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


def _set_market(request, spot, volatility, issuers, seed, correlation):
    if spot is not None:
        request.market.explicit.spot.extend(float(s) for s in spot)
        request.market.explicit.volatility.extend(float(v) for v in volatility)
    elif issuers is not None:
        # Drawn as in the original example.
        generated = request.market.generated
        generated.issuers, generated.seed = issuers, seed
        generated.spot_min, generated.spot_max = SEED_PRESET.spot_min, SEED_PRESET.spot_max
        generated.volatility_min = SEED_PRESET.volatility_min
        generated.volatility_max = SEED_PRESET.volatility_max
    else:
        raise ValueError("give spot and volatility, or issuers")
    if correlation is not None:
        request.market.correlation.extend(np.asarray(correlation, dtype=float).ravel())


def _set_scenarios(request, scenarios, scenario_set, seed):
    if scenario_set is not None:
        request.scenarios.scenario_set = scenario_set
    elif isinstance(scenarios, (int, np.integer)):
        generated = request.scenarios.generated
        generated.columns, generated.seed = int(scenarios), seed
        generated.value_min = SEED_PRESET.scenario_value_min
        generated.value_max = SEED_PRESET.scenario_value_max
    elif scenarios is not None:
        a = np.asarray(scenarios)
        request.scenarios.matrix.rows, request.scenarios.matrix.columns = a.shape
        request.scenarios.matrix.values = np.asfortranarray(a, dtype="<f4").tobytes(order="F")
    else:
        raise ValueError("give scenarios (a count or a matrix) or scenario_set")


def price_request(*, paths, seed, rate, maturity, spot, volatility, issuers, correlation,
                  antithetic, scenarios, scenario_set, column_begin, column_end, statistics,
                  full, terminal_prices, priority, precision):
    """(the PriceRequest of Client.price()'s arguments, (name, kind, level)
    of each statistics item). `full`: whether SC is asked for."""
    if precision not in _PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of fp32, tf32, bf16")
    request = pricer_pb2.PriceRequest(paths=paths, seed=seed, rate=rate, maturity=maturity,
                                      column_begin=column_begin, column_end=column_end,
                                      antithetic=antithetic, priority=priority,
                                      precision=_PRECISIONS[precision])
    _set_market(request, spot, volatility, issuers, seed, correlation)
    _set_scenarios(request, scenarios, scenario_set, seed)
    named = []
    if statistics:
        selection, named = _selection(list(statistics))
        request.output.statistics.CopyFrom(selection)
    request.output.full = full
    request.output.terminal_prices = terminal_prices
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
