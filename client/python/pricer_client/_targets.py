"""Pricing to a target precision: price()'s `target`, a Target or the
CLI's --error-target text ("var:0.99=2%"), checked when made."""

import dataclasses
import math
import numbers
from typing import Optional

from pricer_client._proto import pricer_pb2
from pricer_client._statistics import level_name, levelled_item

_STATISTICS = {"mean": pricer_pb2.PrecisionTarget.STATISTIC_MEAN,
               "stddev": pricer_pb2.PrecisionTarget.STATISTIC_STDDEV,
               "quantile": pricer_pb2.PrecisionTarget.STATISTIC_QUANTILE,
               "var": pricer_pb2.PrecisionTarget.STATISTIC_VAR,
               "es": pricer_pb2.PrecisionTarget.STATISTIC_ES}


def _threshold(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"target {name} must be a number, not {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"target {name} is {value}: must be a finite number >= 0")
    return float(value)


@dataclasses.dataclass(frozen=True)
class Target:
    """The precision each column's `statistic` must reach (docs/risk.md):
    its Monte Carlo error (the standard error of mean, stddev and es; the
    half-width of the interval of quantile and var, at error_confidence)
    at most `relative` times the statistic's magnitude (0.02: 2%) and at
    most `absolute` (in the statistic's units); give one or both.

        Target("var", 0.99, relative=0.02)   # what "var:0.99=2%" says
        Target("mean", absolute=0.01)        # what "mean=0.01" says
    """

    statistic: str  # mean, stddev, quantile, var or es
    level: Optional[float] = None  # for quantile, var and es
    relative: Optional[float] = None
    absolute: Optional[float] = None

    def __post_init__(self):
        if self.statistic not in _STATISTICS:
            raise ValueError(f"target statistic {self.statistic!r} is not one of "
                             f"{', '.join(_STATISTICS)} (min and max have no error)")
        if self.statistic in ("mean", "stddev"):
            if self.level is not None:
                raise ValueError(f"target {self.statistic} takes no level, not {self.level!r}")
        else:
            if self.level is None:
                raise ValueError(f"target {self.statistic} needs a level, e.g. "
                                 f"Target({self.statistic!r}, 0.99, relative=0.02)")
            if isinstance(self.level, bool) or not isinstance(self.level, numbers.Real):
                raise TypeError(f"target level must be a number, not {self.level!r}")
            object.__setattr__(self, "level", levelled_item(
                "target", f"{self.statistic}:{self.level!r}", self.statistic, self.level))
        relative = _threshold("relative", self.relative)
        absolute = _threshold("absolute", self.absolute)
        if not (relative or absolute):
            raise ValueError(f"target {self.item} has no threshold: give relative or "
                             "absolute > 0")
        object.__setattr__(self, "relative", relative)
        object.__setattr__(self, "absolute", absolute)

    @property
    def item(self) -> str:
        """The statistics item it is about ("var:0.99"): price() needs it."""
        if self.level is None:
            return self.statistic
        return f"{self.statistic}:{level_name(self.level)}"

    @property
    def name(self) -> str:
        """The statistic's column in PriceResult.statistics ("var_0.99")."""
        return self.item.replace(":", "_")

    @classmethod
    def parse(cls, text: str) -> "Target":
        """The Target of the CLI's --error-target syntax: "var:0.99=2%"
        (relative, in percent), "mean=0.01" (absolute)."""
        item, equals, threshold = text.strip().partition("=")
        kind, colon, level = item.strip().partition(":")
        threshold = threshold.strip()
        if not equals or not threshold:
            raise ValueError(f"target {text!r} has no threshold: write e.g. 'var:0.99=2%' "
                             "(relative) or 'mean=0.01' (absolute)")
        percent = threshold.endswith("%")
        try:
            value = float(threshold[:-1] if percent else threshold)
            level = float(level) if colon else None
        except ValueError:
            raise ValueError(f"target {text!r} is not statistic[:level]=threshold[%], e.g. "
                             "'var:0.99=2%' or 'mean=0.01'") from None
        if percent:
            return cls(kind, level, relative=value / 100)
        return cls(kind, level, absolute=value)


def as_target(target) -> Target:
    """price()'s `target`: a Target, or a string that Target.parse reads."""
    if isinstance(target, str):
        return Target.parse(target)
    if not isinstance(target, Target):
        raise TypeError("target must be a pricer_client.Target or a string such as "
                        f"'var:0.99=2%', not {target!r}")
    return target


def precision_target(target: Target, max_paths: int):
    """The request's PrecisionTarget: unset thresholds are 0."""
    return pricer_pb2.PrecisionTarget(
        statistic=_STATISTICS[target.statistic], level=target.level or 0.0,
        relative=target.relative or 0.0, absolute=target.absolute or 0.0, max_paths=max_paths)
