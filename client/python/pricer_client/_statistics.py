"""Statistics items ("mean", "var:0.99", ...): their levels, their names
(the CLI's CSV columns), the StatisticsSelection they ask for, and the
columns of their Monte Carlo errors."""

import decimal
from typing import Sequence

from pricer_client._proto import pricer_pb2

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


def level_name(level: float) -> str:
    """The level as statistics names write it: the shortest decimal that
    reads back as the same double, in fixed notation (0.99, 0.975, 0.00001),
    as the CLI's CSV columns do."""
    return format(decimal.Decimal(repr(float(level))), "f")


def levelled_item(what, item, kind, level: float) -> float:
    """The level of `item`, a quantile, var or es at `level`, checked: a
    ValueError names `what` ("statistics item") and the item."""
    open_interval = _LEVELLED[kind][1]
    if not (0 < level < 1 if open_interval else 0 <= level <= 1):  # NaN fails too
        raise ValueError(f"{what} {item!r}: the level must be in "
                         f"{'(0, 1)' if open_interval else '[0, 1]'}")
    return float(level)


def _levelled(what, item, kind, text):
    """The level of `item` of `kind` ("var:0.99", `text` after its colon),
    checked, and its name ("var_0.99")."""
    try:
        level = float(text)
    except ValueError:
        raise ValueError(f"{what} {item!r}: the level {text!r} is not a number") from None
    level = levelled_item(what, item, kind, level)
    return level, f"{kind}_{level_name(level)}"


def _once(what, given, name, item):
    """Records `item` under `name` in `given`, refusing a second item of
    that name (another spelling of the same level)."""
    if name in given:
        raise ValueError(f"{what}s {given[name]!r} and {item!r} are the same item ({name})")
    given[name] = item


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
            level, name = _levelled("statistics item", item, kind, text)
            getattr(selection, _LEVELLED[kind][0]).append(level)
        else:
            raise ValueError(f"statistics item {item!r} is not one of mean, stddev, min, max, "
                             "quantile:L, var:L, es:L")
        _once("statistics item", given, name, item)
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


def contribution_levels(selection, items: Sequence[str]):
    """Adds price()'s `contributions` ("es:0.975", "var:0.99") to
    `selection`: each level to es_contributions or var_contributions, and to
    es or var when they lack it. Returns their names ("es_0.975"), ES's
    first (the order the server sends them in), and (name, kind, level,
    "values") of each level added to es or var, for the statistics columns."""
    if isinstance(items, str):
        raise TypeError(f"contributions must be a list of items, not the string {items!r}")
    levels, given = {"es": [], "var": []}, {}
    for item in items:
        kind, _, text = str(item).strip().partition(":")
        if kind not in levels or not text:
            raise ValueError(f"contributions item {item!r} is not es:L or var:L")
        level, name = _levelled("contributions item", item, kind, text)
        _once("contributions item", given, name, item)
        levels[kind].append((name, level))
    names, added = [], []
    for kind, field in (("es", selection.es), ("var", selection.var)):
        for name, level in levels[kind]:
            if level not in field:
                field.append(level)
                added.append((name, kind, level, "values"))
            getattr(selection, f"{kind}_contributions").append(level)
            names.append(name)
    if not names:
        raise ValueError("contributions is empty: give None for no contributions")
    return names, added
