"""The Monte Carlo errors of a real pricerd's statistics against closed
forms (docs/risk.md, "Errors"): one issuer (a lognormal terminal price, whose
mean, stddev, quantiles, VaR and ES are known exactly) held once.

Coverage: over 400 seeds at P = 5,000, each 95% interval (estimate -+ z se
for mean, stddev and ES; the order-statistic interval for quantile 0.05 and
VaR 0.99) must cover the true value in 93% to 97% of the runs, with
independent paths and with antithetic pairs. The tolerance is the issue's:
a correct 95% interval covers in 400 runs 380 -+ 4.4 (binomial sd), so the
band is -+ 1.8 sd; the seeds are fixed, so the outcome is too.
Scaling: averaged over 40 seeds, every error shrinks by 4 (within 10%)
from P = 10,000 to P = 160,000."""

import math
import statistics
import sys

import grpc
import numpy as np

from pricerd_process import OperationsTestCase, main  # noqa: E402  (tests/service)
from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process
from pricer_client._proto import pricer_pb2

SPOT, SIGMA, RATE, MATURITY = 100.0, 0.25, 0.02, 1.0
Q, VAR, ES = 0.05, 0.99, 0.975
NORMAL = statistics.NormalDist()


def truth():
    """The closed forms of SC = ST, one unit of one lognormal issuer."""
    forward = SPOT * math.exp(RATE * MATURITY)
    s = SIGMA * math.sqrt(MATURITY)
    drift = (RATE - SIGMA ** 2 / 2) * MATURITY

    def quantile(level):
        return SPOT * math.exp(drift + s * NORMAL.inv_cdf(level))

    discount = math.exp(-RATE * MATURITY)
    tail = 1 - ES
    # E[ST | ST <= quantile_p] = forward * Phi(Phi^-1(p) - s) / p
    tail_mean = forward * NORMAL.cdf(NORMAL.inv_cdf(tail) - s) / tail
    return {"mean": forward, "stddev": forward * math.sqrt(math.exp(s * s) - 1),
            "quantile": quantile(Q), "var": SPOT - discount * quantile(1 - VAR),
            "es": SPOT - discount * tail_mean}


def request(paths, seed, antithetic):
    r = pricer_pb2.PriceRequest(paths=paths, seed=seed, rate=RATE, maturity=MATURITY,
                                antithetic=antithetic)
    r.market.explicit.spot.append(SPOT)
    r.market.explicit.volatility.append(SIGMA)
    r.scenarios.matrix.rows = r.scenarios.matrix.columns = 1
    r.scenarios.matrix.values = np.ones(1, "<f4").tobytes()
    s = r.output.statistics
    s.mean = s.stddev = s.errors = True
    s.quantiles.append(Q)
    s.var.append(VAR)
    s.es.append(ES)
    return r


def column(stub, paths, seed, antithetic):
    """{name: (estimate, lower, upper, standard error or None)} of the column."""
    for reply in stub.Price(request(paths, seed, antithetic), timeout=scaled(60)):
        if reply.HasField("chunk"):
            c = reply.chunk.statistics
            return {"mean": (c.mean[0], None, None, c.mean_standard_error[0]),
                    "stddev": (c.stddev[0], None, None, c.stddev_standard_error[0]),
                    "quantile": (c.quantiles[0].values[0], c.quantiles[0].lower[0],
                                 c.quantiles[0].upper[0], None),
                    "var": (c.var[0].values[0], c.var[0].lower[0], c.var[0].upper[0], None),
                    "es": (c.es[0].values[0], None, None, c.es[0].standard_error[0])}
    raise AssertionError("no chunk")


class StatisticErrorsTest(OperationsTestCase):
    def setUp(self):
        self.server = self.start_server(metrics=False)
        self.pricer = self.stub(self.server)

    def coverage(self, antithetic):
        true, z = truth(), NORMAL.inv_cdf(0.975)
        covered = {name: 0 for name in true}
        for seed in range(400):
            for name, (estimate, lower, upper, se) in column(self.pricer, 5000, seed,
                                                              antithetic).items():
                if se is not None:
                    lower, upper = estimate - z * se, estimate + z * se
                self.assertLessEqual(lower, estimate, name)
                self.assertGreaterEqual(upper, estimate, name)
                covered[name] += lower <= true[name] <= upper
        shares = {name: count / 400 for name, count in covered.items()}
        print(f"\ncoverage of 95% intervals, 400 seeds, P = 5000, antithetic={antithetic}: "
              f"{shares}", file=sys.stderr)
        for name, share in shares.items():
            self.assertTrue(0.93 <= share <= 0.97, f"{name}: {share:.4f} of the runs covered")

    def test_coverage_of_independent_paths(self):
        self.coverage(False)

    def test_coverage_of_antithetic_pairs(self):
        self.coverage(True)

    def test_errors_shrink_as_one_over_the_square_root_of_the_paths(self):
        def widths(paths):
            """Each error's mean over 40 seeds: the se, or the interval's width."""
            total = {}
            for seed in range(40):
                for name, (_, lower, upper, se) in column(self.pricer, paths, seed,
                                                          False).items():
                    total[name] = total.get(name, 0) + (se if se is not None else upper - lower)
            return total

        small, large = widths(10_000), widths(160_000)
        ratios = {name: small[name] / large[name] for name in small}
        print(f"\nerror at P = 10,000 over error at P = 160,000 (sqrt ratio 4): {ratios}",
              file=sys.stderr)
        for name, ratio in ratios.items():
            self.assertLess(abs(ratio / 4 - 1), 0.10, f"{name}: ratio {ratio:.3f}")

    def test_without_errors_nothing_more_is_sent(self):
        plain = request(1000, 1, False)
        plain.output.statistics.errors = False
        for reply in self.pricer.Price(plain, timeout=scaled(60)):
            if reply.HasField("chunk"):
                c = reply.chunk.statistics
                self.assertEqual((len(c.mean_standard_error), len(c.stddev_standard_error)),
                                 (0, 0))
                for level in (*c.quantiles, *c.var, *c.es):
                    self.assertEqual((len(level.lower), len(level.upper),
                                      len(level.standard_error)), (0, 0, 0))

    def test_confidence_widens_the_intervals_and_bad_ones_are_refused(self):
        narrow, wide = request(5000, 3, False), request(5000, 3, False)
        narrow.output.statistics.error_confidence = 0.5
        wide.output.statistics.error_confidence = 0.999
        width = []
        for r in (narrow, wide):
            for reply in self.pricer.Price(r, timeout=scaled(60)):
                if reply.HasField("chunk"):
                    level = reply.chunk.statistics.var[0]
                    width.append(level.upper[0] - level.lower[0])
        self.assertLess(2.5 * width[0], width[1])
        for bad in (1.0, -0.5, 1.5, float("nan")):
            r = request(100, 1, False)
            r.output.statistics.error_confidence = bad
            with self.assertRaises(grpc.RpcError) as refused:
                list(self.pricer.Price(r, timeout=scaled(60)))
            self.assertEqual(refused.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("output.statistics.error_confidence", refused.exception.details())
            self.assertIn(("pricer-field", "output.statistics.error_confidence"),
                          refused.exception.trailing_metadata())


if __name__ == "__main__":
    main()
