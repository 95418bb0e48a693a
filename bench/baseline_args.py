"""The command line the CPU baselines share (numpy_baseline.py, tf_baseline.py):
the original example's shape, the chunk of columns per step, the market's
rate and maturity, and the VaR and ES levels."""
import argparse


def parse(description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--paths", type=int, default=10000)
    parser.add_argument("--issuers", type=int, default=500)
    parser.add_argument("--scenarios", type=int, default=100000)
    parser.add_argument("--chunk-columns", type=int, default=10000)
    parser.add_argument("--rate", type=float, default=0.02)
    parser.add_argument("--maturity", type=float, default=1.0)
    parser.add_argument("--var", type=float, default=0.99)
    parser.add_argument("--es", type=float, default=0.975)
    return parser.parse_args()
