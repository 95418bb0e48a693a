"""The argument checks the request builders share: a wrong value raises
TypeError or ValueError naming the argument (`name`)."""

import math
import numbers


def number(name, value):
    """`value` as a float: a finite real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} is {value}: must be finite")
    return float(value)
