"""Pricing to a target precision in both Python clients, without pricerd:
price()'s target and max_paths checked before any call, and the replies of
a targeted request (rounds, chunks out of column order, each with the paths
its columns were priced with and target_met) put together by a scripted
server in this process (127.0.0.1, port 0): the result's column_paths,
target_met and CSV, progress, a call broken midway retried for the missing
columns only, split, and replies that contradict the request."""

import os
import sys
import tempfile
import dataclasses
import threading
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_clients import BlockingAioClient, assert_same_result, serve_in_process  # noqa: E402

from pricer_client import Client, PricerError, Target  # noqa: E402
from pricer_client._proto import pricer_pb2, pricer_pb2_grpc  # noqa: E402

CLIENTS = (Client, BlockingAioClient)
PATHS, MAX_PATHS, COLUMNS = 1000, 8000, 60
JOB = dict(issuers=2, paths=PATHS, scenarios=COLUMNS, statistics=["var:0.99"],
           target="var:0.99=2%", max_paths=MAX_PATHS)


def final_round(j):
    """The round in which the scripted server sends column j: runs of 5."""
    return (j // 5) % 4


def met(j):
    return j % 7 != 0


def var(j):
    return j + final_round(j) / 10


class ScriptedPricer(pricer_pb2_grpc.PricerServicer):
    """Answers a targeted request as pricerd does: each round's columns,
    runs of 5 columns in reverse order, a chunk each. `break_after`: the
    next call sends chunks of at most 2 columns and stops with UNAVAILABLE
    after that many. `spoil(k, reply)`: what chunk k becomes, and
    `edit(reply)`: what an accepted or round reply becomes, to send
    contradictions."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests = []
        self.break_after = None
        self.spoil = None
        self.edit = None

    def other(self, reply):
        return self.edit(reply) if self.edit else reply

    def Price(self, request, context):
        with self._lock:
            self.requests.append(request)
            break_after, self.break_after = self.break_after, None
        begin, end, paths = request.column_begin, request.column_end, request.paths
        yield self.other(pricer_pb2.PriceReply(accepted=pricer_pb2.JobAccepted(
            issuers=2, paths=paths, column_begin=begin, column_end=end)))
        sent = 0
        for k in range(4):
            short = [j for j in range(begin, end) if final_round(j) >= k]
            if not short:
                break
            yield self.other(pricer_pb2.PriceReply(round=pricer_pb2.RoundStarted(
                round=k, paths=paths << k, columns=len(short), column_begin=short[0],
                column_end=short[-1] + 1)))
            done = [j for j in short if final_round(j) == k]
            runs = [[j for j in done if j // 5 == run] for run in sorted({j // 5 for j in done})]
            width = 5 if break_after is None else 2
            for columns in [run[at:at + width] for run in reversed(runs)
                            for at in range(0, len(run), width)]:
                if sent == break_after:
                    context.abort(grpc.StatusCode.UNAVAILABLE, "broken on purpose")
                chunk = self.chunk(columns, paths << k)
                yield self.spoil(sent, chunk) if self.spoil else chunk
                sent += 1
        yield pricer_pb2.PriceReply(finished=pricer_pb2.JobFinished(elapsed_seconds=0.5))

    def ListDevices(self, request, context):  # a split's warm-up asks
        return pricer_pb2.ListDevicesReply(server_id="scripted")

    @staticmethod
    def chunk(columns, rows):
        statistics = pricer_pb2.ColumnStatistics(v0=[float(j) for j in columns],
                                                 target_met=[met(j) for j in columns])
        values = [var(j) for j in columns]
        statistics.var.add(level=0.99, values=values, lower=[v - 1 for v in values],
                           upper=[v + 0.5 for v in values])
        return pricer_pb2.PriceReply(chunk=pricer_pb2.ResultChunk(
            column_begin=columns[0], column_end=columns[-1] + 1, rows=rows,
            statistics=statistics))


def expected_csv():
    lines = ["column,v0,var_0.99,var_0.99_lo,var_0.99_hi,paths,target_met"]
    for j in range(COLUMNS):
        v = var(j)
        lines.append(f"{j},{float(j)!r},{v!r},{v - 1!r},{v + 0.5!r},"
                     f"{PATHS << final_round(j)},{int(met(j))}")
    return "\n".join(lines) + "\n"


class TargetRepliesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pricer = ScriptedPricer()
        cls.server, cls.target = serve_in_process(cls.pricer)
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop(grace=None)
        cls.dir.cleanup()

    def setUp(self):
        self.pricer.requests, self.pricer.spoil, self.pricer.edit = [], None, None

    def price(self, make, **arguments):
        with make(self.target) as client:
            return client.price(**{**JOB, **arguments})

    def assert_expected(self, result):
        columns = np.arange(COLUMNS)
        self.assertEqual((result.column_begin, result.column_end, result.paths),
                         (0, COLUMNS, PATHS))
        self.assertEqual(result.column_paths.dtype, np.int64)
        self.assertEqual(result.column_paths.tolist(),
                         [PATHS << final_round(j) for j in columns])
        self.assertEqual(result.target_met.dtype, bool)
        self.assertEqual(result.target_met.tolist(), [met(j) for j in columns])
        self.assertEqual(list(result.statistics), ["v0", "var_0.99", "var_0.99_lo",
                                                   "var_0.99_hi"])
        self.assertEqual(result.statistics["var_0.99"].tolist(), [var(j) for j in columns])
        path = os.path.join(self.dir.name, "targeted.csv")
        result.write_csv(path)
        with open(path) as f:
            self.assertEqual(f.read(), expected_csv())

    def test_rounds_and_chunks_out_of_order_make_one_result(self):
        for make in CLIENTS:
            with self.subTest(client=make.__name__):
                seen = []
                result = self.price(make, progress=lambda done, total: seen.append(
                    (done, total)))
                self.assert_expected(result)
                # One call per chunk of 5 columns: the columns so far, of all.
                self.assertEqual(seen, [(5 * k, COLUMNS) for k in range(1, COLUMNS // 5 + 1)])
        request = self.pricer.requests[0]
        self.assertEqual((request.target.statistic, request.target.level,
                          request.target.relative, request.target.max_paths),
                         (pricer_pb2.PrecisionTarget.STATISTIC_VAR, 0.99, 0.02, MAX_PATHS))
        self.assertTrue(request.output.statistics.errors)  # implied by the target

    def test_a_broken_call_is_asked_again_for_the_span_of_the_missing_columns(self):
        unbroken = self.price(Client)
        for make in CLIENTS:
            with self.subTest(client=make.__name__):
                self.pricer.requests = []
                self.pricer.break_after = 4
                seen = []
                result = self.price(make, progress=lambda done, total: seen.append(done))
                assert_same_result(self, result, unbroken)
                self.assert_expected(result)
                # It sent [40, 42), [42, 44), [44, 45), [20, 22) and broke: the
                # retry asks for the span of the gaps, [0, 60), and takes
                # [22, 25) of its [20, 25) and none of [40, 45).
                asked = [(r.column_begin, r.column_end) for r in self.pricer.requests]
                self.assertEqual(asked, [(0, 60), (0, 60)])
                self.assertEqual(seen[:4], [2, 4, 5, 7])
                self.assertEqual(seen[4:6], [10, 15])  # [22, 25) then [0, 5)
                self.assertEqual(seen[-1], COLUMNS)
                self.assertTrue(all(r.target.max_paths == MAX_PATHS
                                    for r in self.pricer.requests))

    def test_split_parts_make_the_same_result(self):
        whole = self.price(Client)
        for make in CLIENTS:
            with self.subTest(client=make.__name__):
                self.pricer.requests = []
                assert_same_result(self, self.price(make, split=3), whole)
                self.assertEqual(sorted((r.column_begin, r.column_end)
                                        for r in self.pricer.requests),
                                 [(0, 20), (20, 40), (40, 60)])

    def test_replies_that_contradict_the_target_are_internal(self):
        def rows(k, reply):
            reply.chunk.rows = 3 * PATHS if k == 2 else reply.chunk.rows
            return reply

        def beyond(k, reply):
            reply.chunk.rows = 16 * PATHS if k == 2 else reply.chunk.rows
            return reply

        def no_met(k, reply):
            del reply.chunk.statistics.target_met[:]
            return reply

        def overlap(k, reply):  # [18, 25) in round 0, then [15, 20) in round 3, in one call
            return ScriptedPricer.chunk(list(range(18, 25)), PATHS) if k == 1 else reply

        for spoil, message in (
                (rows, r"a chunk of columns \[\d+, \d+\) of 3000 rows for 1000 paths "
                       r"\(not 1000 x 2\^k <= 8000\)"),
                (beyond, "of 16000 rows for 1000 paths"),
                (no_met, "no target_met for 5 columns"),
                (overlap, r"columns of \[15, 20\) twice")):
            self.pricer.spoil = spoil
            self.assert_internal(spoil.__name__, message)

    def test_accepted_and_round_replies_that_contradict_are_internal(self):
        def no_paths(reply):
            if reply.HasField("accepted"):
                reply.accepted.paths = 0
            return reply

        def round_paths(reply):  # round 1 of 3 x P paths, not 2 x P
            if reply.HasField("round") and reply.round.round == 1:
                reply.round.paths = 3 * PATHS
            return reply

        for edit, message in ((no_paths, "an accepted reply of 0 paths"),
                              (round_paths, "a round 1 of 3000 paths that the request does "
                                            "not have")):
            self.pricer.edit = edit
            self.assert_internal(edit.__name__, message)

    def assert_internal(self, name, message):
        for make in CLIENTS:
            with self.subTest(spoiled=name, client=make.__name__):
                with self.assertRaisesRegex(PricerError, message) as error:
                    self.price(make)
                self.assertEqual(error.exception.code, grpc.StatusCode.INTERNAL)


class TargetArgumentsTest(unittest.TestCase):
    """Every check happens before any call: nothing listens at the target."""

    BAD = [  # (arguments, exception, what the message must say)
        (dict(target="var:0.95=2%"), ValueError,
         "target var:0.95 is not among statistics: add 'var:0.95' to them"),
        (dict(target="stddev=0.1"), ValueError, "target stddev is not among statistics"),
        (dict(target="mean=1%", statistics=None, full=True), ValueError,
         "target mean is not among statistics"),
        (dict(target="var:0.99"), ValueError, "target 'var:0.99' has no threshold"),
        (dict(target="var:0.99=0%"), ValueError, "target var:0.99 has no threshold"),
        (dict(target="var:0.99=-2%"), ValueError, "target relative is -0.02: must be"),
        (dict(target="mean=-1"), ValueError, "target absolute is -1.0: must be"),
        (dict(target="var:0.99=2%", max_paths=None), ValueError,
         "max_paths is missing: a target needs"),
        (dict(target="var:0.99=2%", max_paths=999), ValueError,
         r"max_paths is 999: must be >= paths \(1000\)"),
        (dict(target="var:0.99=2%", max_paths=4000.0), TypeError,
         "max_paths must be an integer, not 4000.0"),
        (dict(target=None, max_paths=4000), ValueError, "max_paths is 4000: it needs a target"),
        (dict(target="var:0.99=2%", full=True), ValueError,
         "full is not available with a target"),
        (dict(target="var:0.99=2%", terminal_prices=True), ValueError,
         "terminal_prices is not available with a target"),
        (dict(target="min=1"), ValueError, "target statistic 'min' is not one of mean, stddev, "
                                           r"quantile, var, es \(min and max have no error\)"),
        (dict(target="var=1%"), ValueError, "target var needs a level"),
        (dict(target="mean:0.5=1%"), ValueError, "target mean takes no level"),
        (dict(target="var:1=1%"), ValueError, r"target 'var:1.0': the level must be in \(0, 1\)"),
        (dict(target="var:high=1%"), ValueError,
         r"target 'var:high=1%' is not statistic\[:level\]=threshold\[%\]"),
        (dict(target=("var", 0.99)), TypeError, "target must be a pricer_client.Target or a "
                                                "string such as 'var:0.99=2%', not"),
        (dict(target="var:0.99=2%", errors="yes"), TypeError, "errors must be True or False"),
    ]

    def test_bad_targets_are_refused_before_any_call(self):
        for make in CLIENTS:
            with make("127.0.0.1:1") as client:  # nothing listens there
                for arguments, error, message in self.BAD:
                    with self.subTest(client=make.__name__, arguments=arguments):
                        with self.assertRaisesRegex(error, message):
                            client.price(**{**JOB, "max_paths": 4000, **arguments})

    def test_a_target_is_its_text(self):
        self.assertEqual(Target.parse("var:.99=2%"), Target("var", 0.99, relative=0.02))
        self.assertEqual(Target.parse(" es:0.975 = 0.5% "), Target("es", 0.975, relative=0.005))
        self.assertEqual(Target.parse("mean=0.01"), Target("mean", absolute=0.01))
        self.assertEqual(Target.parse("quantile:0=3"), Target("quantile", 0, absolute=3))
        both = Target("es", 0.975, relative=0.01, absolute=0.25)
        self.assertEqual((both.item, both.name), ("es:0.975", "es_0.975"))
        with self.assertRaises(dataclasses.FrozenInstanceError):
            both.relative = 0.5
        with self.assertRaisesRegex(TypeError, "target relative must be a number, not '1'"):
            Target("mean", relative="1")
        with self.assertRaisesRegex(TypeError, "target level must be a number, not True"):
            Target("var", True, relative=0.01)
        with self.assertRaisesRegex(ValueError, "target var:0.99 has no threshold: give "
                                                "relative or absolute > 0"):
            Target("var", 0.99, relative=0.0, absolute=0.0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
