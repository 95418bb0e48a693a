"""Both clients follow proto/pricer/v1/client_protocol.proto: the Python
client and the CLI retry a broken call only for the codes its RetryPolicy
names (UNAVAILABLE, ABORTED), as often and after as long as it says, and ask
for the draws and sizes of its SeedPreset. They talk to a recording server in
this process (127.0.0.1, port 0) that fails Price calls on demand."""

import argparse
import inspect
import os
import subprocess
import sys
import threading
import time
import unittest

import grpc

from pricer_client._proto import client_protocol_pb2, pricer_pb2, pricer_pb2_grpc
import pricer_client
from pricer_client import Client, PricerError
from pricer_client import client as client_module
from pricer_client._channel import channel_options
from python_clients import serve_in_process  # tests/client, this script's folder

ARGS = None
POLICY = client_protocol_pb2.RetryPolicy()
CHANNEL = client_protocol_pb2.ChannelSettings()
SEED = client_protocol_pb2.SeedPreset()
# Every code a call can end with but OK.
FAILURES = [code for code in grpc.StatusCode if code != grpc.StatusCode.OK]


def protocol_codes():
    return {grpc.StatusCode[name] for name in POLICY.retryable_codes.split(",")}


def backoffs():
    """The waits before each retry without progress, in seconds."""
    waits, wait = [], POLICY.first_backoff_ms / 1000
    for _ in range(POLICY.max_retries_without_progress):
        waits.append(wait)
        wait *= POLICY.backoff_multiplier
    return waits


class FailingPricer(pricer_pb2_grpc.PricerServicer):
    """Records each Price request and when it came; fails the next
    `failures` calls with `code`, and answers the others with their columns,
    one path, no values."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests, self.times = [], []
        self._failures, self._code = 0, None

    def fail_next(self, failures, code):
        with self._lock:
            self._failures, self._code = failures, code
            self.requests, self.times = [], []

    def Price(self, request, context):
        with self._lock:
            self.requests.append(request)
            self.times.append(time.monotonic())
            fail = self._failures > 0
            self._failures -= fail
        if fail:
            context.abort(self._code, "broken on purpose")
        begin, end = request.column_begin, request.column_end
        yield pricer_pb2.PriceReply(accepted=pricer_pb2.JobAccepted(
            issuers=1, paths=1, column_begin=begin, column_end=end))
        yield pricer_pb2.PriceReply(chunk=pricer_pb2.ResultChunk(
            column_begin=begin, column_end=end, rows=1))
        yield pricer_pb2.PriceReply(finished=pricer_pb2.JobFinished())


class ClientProtocolTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pricer_service = FailingPricer()
        cls.server, cls.target = serve_in_process(cls.pricer_service)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop(grace=None)

    def cli(self, *args):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PRICER_")}
        return subprocess.run([ARGS.pricer, *args], capture_output=True, text=True, timeout=60,
                              env=environment)

    def cli_price(self, *args):
        return self.cli("price", "--target", self.target, *args)

    def assert_waited_the_backoffs(self):
        times = self.pricer_service.times
        self.assertEqual(len(times), POLICY.max_retries_without_progress + 1)
        for k, wait in enumerate(backoffs()):
            self.assertGreaterEqual(times[k + 1] - times[k], wait, k)

    def test_the_canon_unavailable_and_aborted(self):
        self.assertEqual(POLICY.retryable_codes, "UNAVAILABLE,ABORTED")
        self.assertEqual(protocol_codes(), {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED})
        self.assertEqual(backoffs(), [0.2, 0.4, 0.8])

    # The Python client.

    def test_python_constants_are_the_protocols(self):
        self.assertEqual(client_module.MAX_RETRIES, POLICY.max_retries_without_progress)
        self.assertEqual(client_module.FIRST_BACKOFF_SECONDS, POLICY.first_backoff_ms / 1000)
        self.assertEqual(client_module.RETRYABLE_CODES, protocol_codes())
        target = inspect.signature(pricer_client.Client).parameters["target"].default
        self.assertEqual(target, CHANNEL.default_target)
        self.assertEqual(channel_options(), [
            ("grpc.lb_policy_name", CHANNEL.load_balancing_policy),
            ("grpc.keepalive_time_ms", CHANNEL.keepalive_time_ms),
            ("grpc.keepalive_timeout_ms", CHANNEL.keepalive_timeout_ms),
            ("grpc.http2.max_pings_without_data", CHANNEL.max_pings_without_data)])

    def test_python_retries_the_codes_of_the_protocol_and_no_other(self):
        with Client(self.target) as client:
            for code in FAILURES:
                with self.subTest(code=code.name):
                    self.pricer_service.fail_next(1, code)
                    retried = code in protocol_codes()
                    try:
                        client.price(issuers=1, paths=1, scenarios=10, statistics=None, full=True)
                        self.assertTrue(retried, "a call that should fail succeeded")
                    except PricerError as error:
                        self.assertFalse(retried, error)
                        self.assertEqual(error.code, code)
                    self.assertEqual(len(self.pricer_service.requests), 2 if retried else 1)

    def test_python_gives_up_after_the_retries_of_the_protocol(self):
        self.pricer_service.fail_next(1000, grpc.StatusCode.UNAVAILABLE)
        with Client(self.target) as client, self.assertRaises(PricerError) as error:
            client.price(issuers=1, paths=1, scenarios=10, statistics=None, full=True)
        self.assertEqual(error.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assert_waited_the_backoffs()

    def test_python_draws_are_the_seed_presets(self):
        self.pricer_service.fail_next(0, None)
        with Client(self.target) as client:
            client.price(issuers=3, paths=2, scenarios=4, statistics=None, full=True)
        request = self.pricer_service.requests[0]
        market, scenarios = request.market.generated, request.scenarios.generated
        self.assertEqual((market.spot_min, market.spot_max), (SEED.spot_min, SEED.spot_max))
        self.assertEqual((market.volatility_min, market.volatility_max),
                         (SEED.volatility_min, SEED.volatility_max))
        self.assertEqual((scenarios.value_min, scenarios.value_max),
                         (SEED.scenario_value_min, SEED.scenario_value_max))

    # The CLI.

    def test_cli_default_target_is_the_protocols(self):
        proc = self.cli("--help")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"--target TEXT={CHANNEL.default_target} ", proc.stdout)

    def test_cli_retries_the_codes_of_the_protocol_and_no_other(self):
        for code in FAILURES:
            with self.subTest(code=code.name):
                self.pricer_service.fail_next(1, code)
                proc = self.cli_price("--issuers", "1", "--paths", "1", "--scenarios", "10")
                if code in protocol_codes():
                    self.assertEqual(proc.returncode, 0, proc.stderr)
                    self.assertIn(f"broke with {code.value[0]} {code.name}: broken on purpose; "
                                  "retry 1 of 3 in 0.2 s", proc.stderr)
                    self.assertEqual(len(self.pricer_service.requests), 2)
                else:
                    self.assertEqual(proc.returncode, 1, proc.stderr)
                    self.assertEqual(proc.stderr, f"pricer: {code.value[0]} {code.name}: "
                                                  "broken on purpose\n")
                    self.assertEqual(len(self.pricer_service.requests), 1)

    def test_cli_gives_up_after_the_retries_of_the_protocol(self):
        self.pricer_service.fail_next(1000, grpc.StatusCode.UNAVAILABLE)
        proc = self.cli_price("--issuers", "1", "--paths", "1", "--scenarios", "10")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        retries = POLICY.max_retries_without_progress
        for k, wait in enumerate(backoffs()):
            self.assertIn(f"retry {k + 1} of {retries} in {wait:.1f} s", proc.stderr)
        self.assertTrue(proc.stderr.endswith("pricer: 14 UNAVAILABLE: broken on purpose\n"),
                        proc.stderr)
        self.assert_waited_the_backoffs()

    def test_cli_seed_preset_is_the_protocols(self):
        self.pricer_service.fail_next(0, None)
        proc = self.cli_price("--preset", "seed", "--column-end", "10")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        request = self.pricer_service.requests[0]
        market, scenarios = request.market.generated, request.scenarios.generated
        self.assertEqual((market.issuers, market.seed), (SEED.issuers, SEED.seed))
        self.assertEqual((market.spot_min, market.spot_max), (SEED.spot_min, SEED.spot_max))
        self.assertEqual((market.volatility_min, market.volatility_max),
                         (SEED.volatility_min, SEED.volatility_max))
        self.assertEqual((request.paths, request.seed, request.rate, request.maturity),
                         (SEED.paths, SEED.seed, SEED.rate, SEED.maturity))
        self.assertEqual((scenarios.columns, scenarios.seed), (SEED.scenarios, SEED.seed))
        self.assertEqual((scenarios.value_min, scenarios.value_max),
                         (SEED.scenario_value_min, SEED.scenario_value_max))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pricer", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
