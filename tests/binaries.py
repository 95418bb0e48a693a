"""What ctest passes every Python test of a real pricerd: the --pricerd and
--pricer paths. The test scripts add tests/ to sys.path and import this."""

import argparse


def parse_binaries():
    """(the two paths, the arguments left for unittest)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--pricerd", required=True)
    parser.add_argument("--pricer", required=True)
    return parser.parse_known_args()
