"""Pricing to a target precision against a real pricerd (docs/risk.md,
"Pricing to a target precision"): the rounds double the paths of the columns
short of the target, every column arrives once with its paths and whether it
met the target, and a column priced with P paths this way equals a direct
request with P paths bit for bit."""

import collections
import random
import time

import grpc

from pricerd_process import OperationsTestCase, main  # noqa: E402  (tests/service)
from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process
from pricer_calls import CallReader, call_status
from pricer_client._proto import pricer_pb2
from pricer_client._protocol import SEED_PRESET

Target = pricer_pb2.PrecisionTarget


def seed_request(columns, *, paths=None, begin=0, end=0, target=None, max_paths=160_000):
    """The seed preset (500 issuers, 10,000 paths, seed 42) on `columns`
    columns, mean, VaR 0.99 and ES 0.975 with their errors; with `target`
    (relative half-width of the VaR 0.99 interval), a targeted request."""
    s = SEED_PRESET
    r = pricer_pb2.PriceRequest(paths=paths or s.paths, seed=s.seed, rate=s.rate,
                                maturity=s.maturity, column_begin=begin, column_end=end)
    m = r.market.generated
    m.issuers, m.seed = s.issuers, s.seed
    m.spot_min, m.spot_max = s.spot_min, s.spot_max
    m.volatility_min, m.volatility_max = s.volatility_min, s.volatility_max
    g = r.scenarios.generated
    g.columns, g.seed = columns, s.seed
    g.value_min, g.value_max = s.scenario_value_min, s.scenario_value_max
    st = r.output.statistics
    st.mean = st.errors = True
    st.var.append(0.99)
    st.es.append(0.975)
    if target is not None:
        r.target.statistic = Target.STATISTIC_VAR
        r.target.level = 0.99
        r.target.relative = target
        r.target.max_paths = max_paths
    return r


def read(stub, request, timeout=300):
    """The replies of one call: (rounds, {column: (rows, met, statistics)}, finished);
    its deadline `timeout`, scaled."""
    rounds, columns, finished = [], {}, None
    for reply in stub.Price(request, timeout=scaled(timeout)):
        kind = reply.WhichOneof("kind")
        if kind == "round":
            rounds.append(reply.round)
        elif kind == "chunk":
            c = reply.chunk
            for j in range(c.column_begin, c.column_end):
                assert j not in columns, "column %d arrived twice" % j
                met = c.statistics.target_met[j - c.column_begin] if c.statistics.target_met else None
                columns[j] = (c.rows, met, column_of(c.statistics, j - c.column_begin))
        elif kind == "finished":
            finished = reply.finished
    return rounds, columns, finished


def column_of(statistics, k):
    """Every number of column k of a chunk's statistics (not target_met)."""
    values = [statistics.v0[k], statistics.mean[k], statistics.mean_standard_error[k]]
    for level in list(statistics.var) + list(statistics.es):
        values += [level.level, level.values[k]]
        values += [a[k] for a in (level.lower, level.upper, level.standard_error) if a]
    return tuple(values)


def half_width(statistics_column):
    """(VaR, half-width of its interval) from column_of's tuple."""
    var, lower, upper = statistics_column[4:7]
    return var, (upper - lower) / 2


class SeedPresetTargetTest(OperationsTestCase):
    COLUMNS = 2_000
    TARGET = 0.02

    def test_the_seed_preset_meets_a_2_percent_var_target_and_columns_equal_direct_requests(self):
        server = self.start_server("--max-job-bytes", "512MiB")
        stub = self.stub(server)
        start = time.time()
        rounds, columns, finished = read(stub, seed_request(self.COLUMNS, target=self.TARGET))
        seconds = time.time() - start
        self.assertEqual(sorted(columns), list(range(self.COLUMNS)))
        paths = collections.Counter(rows for rows, _, _ in columns.values())
        print("2,000 columns of the seed preset, VaR 0.99 to 2%%: %.1f s, %.3g flop; paths %s"
              % (seconds, finished.flops, dict(sorted(paths.items()))), flush=True)
        # Rounds double the paths; each prices the columns the previous left short.
        self.assertEqual([r.round for r in rounds], list(range(len(rounds))))
        self.assertEqual([r.paths for r in rounds], [10_000 * 2 ** r for r in range(len(rounds))])
        self.assertEqual(rounds[0].columns, self.COLUMNS)
        for r in rounds[1:]:
            short = [j for j, (rows, _, _) in columns.items() if rows >= r.paths]
            self.assertEqual(r.columns, len(short))
            self.assertLessEqual(r.column_begin, min(short))
            self.assertGreaterEqual(r.column_end, max(short) + 1)
        self.assertGreater(len(rounds), 1, "the target is met at once: the test shows nothing")
        for j, (rows, met, stats) in columns.items():
            self.assertIn(rows, [r.paths for r in rounds])
            self.assertTrue(met, "column %d missed the target at %d paths" % (j, rows))
            var, width = half_width(stats)
            self.assertLessEqual(width, self.TARGET * abs(var), "column %d" % j)
            if rows > 10_000:  # it missed at half the paths: a later round was needed
                self.assertIn(j, range(rounds[1].column_begin, rounds[1].column_end))
        for j in random.Random(7).sample(range(self.COLUMNS), 6):
            rows, _, stats = columns[j]
            _, direct, _ = read(stub, seed_request(self.COLUMNS, paths=rows, begin=j, end=j + 1))
            self.assertEqual(direct[j][0], rows)
            self.assertEqual(direct[j][2], stats, "column %d at %d paths" % (j, rows))
        # Every round ran under the device's budget.
        device = stub.ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10).devices[0]
        self.assertLessEqual(device.peak_bytes, device.memory_budget_bytes)

    def test_columns_short_at_max_paths_say_so_with_the_last_rounds_paths(self):
        server = self.start_server()
        stub = self.stub(server)
        rounds, columns, _ = read(stub, seed_request(300, target=0.001, max_paths=30_000))
        self.assertEqual([r.paths for r in rounds], [10_000, 20_000])  # 40,000 > max_paths
        self.assertEqual(sorted(columns), list(range(300)))
        for j, (rows, met, stats) in columns.items():
            var, width = half_width(stats)
            self.assertEqual(met, width <= 0.001 * abs(var), "column %d" % j)
            self.assertEqual(rows, 10_000 if met else 20_000, "column %d" % j)
        self.assertTrue(any(not met for _, met, _ in columns.values()))


class RefusedTargetTest(OperationsTestCase):
    def assertRefused(self, stub, request, field, *message):
        code, details, _ = call_status(lambda: list(stub.Price(request, timeout=30)))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, details)
        self.assertTrue(details.startswith(field + " is "), details)
        for part in message:
            self.assertIn(part, details)

    def test_bad_targets_are_refused_naming_the_field(self):
        stub = self.stub(self.start_server())

        def request(**fields):
            r = seed_request(100, target=0.02)
            for name, value in fields.items():
                setattr(r.target, name, value)
            return r

        self.assertRefused(stub, request(relative=-0.01), "target.relative", "-0.01")
        self.assertRefused(stub, request(relative=0), "target.relative", "must be > 0")
        self.assertRefused(stub, request(absolute=-1), "target.absolute")
        self.assertRefused(stub, request(statistic=42), "target.statistic", "42")
        self.assertRefused(stub, request(statistic=Target.STATISTIC_UNSPECIFIED),
                           "target.statistic")
        self.assertRefused(stub, request(statistic=Target.STATISTIC_STDDEV), "target.statistic",
                           "output.statistics.stddev")
        self.assertRefused(stub, request(level=0.995), "target.level", "0.99")
        self.assertRefused(stub, request(statistic=Target.STATISTIC_QUANTILE, level=0.99),
                           "target.level", "output.statistics.quantiles")
        self.assertRefused(stub, request(max_paths=5_000), "target.max_paths", "10000")
        self.assertRefused(stub, request(max_paths=0), "target.max_paths")
        full = request()
        full.output.full = True
        self.assertRefused(stub, full, "output.full")
        # The server keeps serving.
        _, columns, _ = read(stub, request(max_paths=10_000))
        self.assertEqual(len(columns), 100)

    def test_a_last_round_that_fits_no_device_is_refused_before_any_work(self):
        stub = self.stub(self.start_server("--max-job-bytes", "64MiB"))
        request = seed_request(100, target=0.02, max_paths=40_000)  # ST of 80 MB
        code, details, _ = call_status(lambda: list(stub.Price(request, timeout=30)))
        self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED, details)
        self.assertIn("target.max_paths (40000 paths)", details)


class StoppedRoundsTest(OperationsTestCase):
    def bytes_in_use(self, stub):
        return stub.ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10).devices[0].bytes_in_use

    def test_a_cancel_in_a_later_round_stops_it_and_frees_its_memory(self):
        server = self.start_server()
        stub = self.stub(server)
        reader = CallReader(stub.Price(seed_request(4_000, target=0.0005, max_paths=80_000),
                                       timeout=scaled(300)))
        deadline = time.time() + scaled(120)
        while time.time() < deadline and not any(
                r.WhichOneof("kind") == "round" and r.round.round >= 2 for r in reader.replies):
            time.sleep(0.01)
        self.assertFalse(reader.finished(), "all rounds ended before the cancel")
        reader.call.cancel()
        reader.finish(30)
        self.assertCall(reader, grpc.StatusCode.CANCELLED)
        # Back once the running shard ends, well under a second (not timed on
        # its own); bound 10 s, scaled.
        since = time.time()
        while self.bytes_in_use(stub) > 0 and time.time() - since < scaled(10):
            time.sleep(0.01)
        self.assertEqual(self.bytes_in_use(stub), 0)
        self.assertRegex(server.output(), r"round 2 of job-1: 40000 paths")
        self.assertNotRegex(server.output(), r"round 3 of job-1")

    def test_a_deadline_ends_the_rounds(self):
        stub = self.stub(self.start_server())
        # The first round starts within the deadline; the rounds up to 80,000
        # paths take far longer.
        reader = CallReader(stub.Price(seed_request(4_000, target=0.0005, max_paths=80_000),
                                       timeout=scaled(3)))
        reader.finish(30)
        self.assertCall(reader, grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertTrue(any(r.WhichOneof("kind") == "round" for r in reader.replies))


if __name__ == "__main__":
    main()
