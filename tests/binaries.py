"""What every Python test of a real pricerd is given: the --pricerd and
--pricer paths ctest passes, and PRICER_TEST_TIME_SCALE, the factor the
scripts set for slow runs (tests/time_scale.h says which and why). The test
scripts add tests/ to sys.path and import this."""

import argparse
import math
import os


def parse_binaries():
    """(the two paths, the arguments left for unittest)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--pricerd", required=True)
    parser.add_argument("--pricer", required=True)
    return parser.parse_known_args()


def time_scale():
    """PRICER_TEST_TIME_SCALE: how many times slower than an unloaded machine
    this run may be, a number >= 1 (1 when unset or empty)."""
    text = os.environ.get("PRICER_TEST_TIME_SCALE", "")
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise ValueError("PRICER_TEST_TIME_SCALE is %r, not a number >= 1" % text)
    return value


def scaled(seconds):
    """`seconds` times time_scale(): a wall-clock bound not derived from work
    measured in the same test, or how long a wait lasts before it fails."""
    return seconds * time_scale()
