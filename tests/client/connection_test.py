"""What the clients send to reach a server: the bearer token on every call
(retries and split parts included), TLS and mutual TLS, and the health check.
The Python client and the CLI talk to recording servers in this process
(127.0.0.1, port 0; one plain text, one with mutual TLS) that answer Price,
ListDevices, UploadScenarios and grpc.health.v1.Health/Check. The
certificates come from the openssl command (scripts/install-deps.sh)."""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import unittest
from concurrent import futures

import grpc
import numpy as np
from grpc_tools import protoc

from pricer_client._proto import pricer_pb2, pricer_pb2_grpc
from pricer_client import Client, PricerError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from python_clients import BlockingAioClient  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "service"))
from tls_material import make_certificates, read_bytes  # noqa: E402  (the same certificates)

ARGS = None
HEALTH_PROTO_DIR = os.path.join(HERE, "..", "..", "proto", "grpc", "health", "v1")
# What the server's certificate names besides 127.0.0.1.
SERVER_NAME = "localhost"
TOKEN = "s3cret.token-1"


def health_modules(directory):
    """health_pb2 and health_pb2_grpc, generated from the repository's proto
    (the `grpc` package name of the proto would shadow grpcio's as a path)."""
    if protoc.main(["protoc", f"--proto_path={HEALTH_PROTO_DIR}", f"--python_out={directory}",
                    f"--grpc_python_out={directory}", "health.proto"]) != 0:
        raise RuntimeError("protoc failed on health.proto")
    sys.path.insert(0, directory)
    import health_pb2
    import health_pb2_grpc
    return health_pb2, health_pb2_grpc


class Recorder(pricer_pb2_grpc.PricerServicer):
    """Records each call's method and authorization metadata (None when
    absent); fails the first `price_failures` Price calls with UNAVAILABLE
    and answers the others with their columns, one path of zeros."""

    def __init__(self):
        self._lock = threading.Lock()
        self.calls = []
        self.price_failures = 0

    def record(self, method, context):
        with self._lock:
            self.calls.append((method, dict(context.invocation_metadata()).get("authorization")))

    def authorization(self, method):
        with self._lock:
            return [value for name, value in self.calls if name == method]

    def ListDevices(self, request, context):
        self.record("ListDevices", context)
        return pricer_pb2.ListDevicesReply(server_version="9.8.7 (test)")

    def UploadScenarios(self, request_iterator, context):
        self.record("UploadScenarios", context)
        for _ in request_iterator:
            pass
        return pricer_pb2.ScenarioSet(id="recorded")

    def Price(self, request, context):
        self.record("Price", context)
        with self._lock:
            fail = self.price_failures > 0
            self.price_failures -= fail
        if fail:
            context.abort(grpc.StatusCode.UNAVAILABLE, "broken on purpose")
        begin, end = request.column_begin, request.column_end
        yield pricer_pb2.PriceReply(accepted=pricer_pb2.JobAccepted(
            issuers=1, paths=1, column_begin=begin, column_end=end))
        values = bytes(4 * (end - begin)) if request.output.full else b""
        yield pricer_pb2.PriceReply(chunk=pricer_pb2.ResultChunk(
            column_begin=begin, column_end=end, rows=1, values=values))
        yield pricer_pb2.PriceReply(finished=pricer_pb2.JobFinished())


def add_health(server, recorder, health_pb2, health_pb2_grpc):
    """Check: SERVING for "", NOT_SERVING for pricer.v1.Pricer, NOT_FOUND
    for any other service (as gRPC's own health service answers)."""
    serving = health_pb2.HealthCheckResponse

    class Health(health_pb2_grpc.HealthServicer):
        def Check(self, request, context):
            recorder.record("Check", context)
            if request.service == "":
                return serving(status=serving.SERVING)
            if request.service == "pricer.v1.Pricer":
                return serving(status=serving.NOT_SERVING)
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service}")

    health_pb2_grpc.add_HealthServicer_to_server(Health(), server)


class ConnectionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.health = health_modules(cls.dir.name)
        cls.plain = cls.start_server(None)
        cls.certificates = c = make_certificates(cls.dir.name)
        cls.tls = cls.start_server(grpc.ssl_server_credentials(
            [(read_bytes(c["server.key"]), read_bytes(c["server.pem"]))],
            root_certificates=read_bytes(c["ca.pem"]), require_client_auth=True))

    @classmethod
    def start_server(cls, credentials):
        recorder = Recorder()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        pricer_pb2_grpc.add_PricerServicer_to_server(recorder, server)
        add_health(server, recorder, *cls.health)
        if credentials is None:
            port = server.add_insecure_port("127.0.0.1:0")
        else:
            port = server.add_secure_port("127.0.0.1:0", credentials)
        server.start()
        recorder.server, recorder.target = server, f"127.0.0.1:{port}"
        return recorder

    @classmethod
    def tearDownClass(cls):
        for recorder in (cls.plain, cls.tls):
            recorder.server.stop(grace=None)
        cls.dir.cleanup()

    def setUp(self):
        for recorder in (self.plain, self.tls):
            recorder.calls.clear()

    def path(self, name, text=None):
        path = os.path.join(self.dir.name, name)
        if text is not None:
            with open(path, "w") as f:
                f.write(text)
        return path

    def pricer(self, *args, env=None):
        """The CLI with `args`, PRICER_* variables only from `env`."""
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PRICER_")}
        environment.update(env or {})
        return subprocess.run([ARGS.pricer, *args], capture_output=True, text=True,
                              timeout=60, env=environment)

    def tls_flags(self, server_name=SERVER_NAME):
        c = self.certificates
        return ["--tls-ca", c["ca.pem"], "--tls-cert", c["client.pem"], "--tls-key",
                c["client.key"], "--tls-server-name", server_name]

    # The Python clients: the blocking one and pricer_client.aio.

    def each_client(self):
        """Client, then the asyncio client behind a blocking facade, each a
        subtest on servers that have recorded no call yet."""
        for make in (Client, BlockingAioClient):
            with self.subTest(client=make.__name__):
                self.setUp()
                yield make

    def test_python_token_goes_with_every_call(self):
        for make in self.each_client():
            self.plain.price_failures = 1  # the first Price call breaks and is retried
            with make(self.plain.target, token=TOKEN) as client:
                client.devices()
                self.assertEqual(client.upload(np.ones((2, 3)), chunk_bytes=8), "recorded")
                client.price(issuers=1, paths=1, scenarios=10, statistics=None, full=True)
                client.price(issuers=1, paths=1, scenarios=12, statistics=None, full=True,
                             split=3)
            bearer = "Bearer " + TOKEN
            # 1 + at least 3 ListDevices: the split connects to every server
            # before its parts (one call per part at least, more until no new
            # server has answered for 50 ms).
            calls = self.plain.authorization("ListDevices")
            self.assertGreaterEqual(len(calls), 4)
            self.assertEqual(calls, [bearer] * len(calls))
            self.assertEqual(self.plain.authorization("UploadScenarios"), [bearer])
            self.assertEqual(self.plain.authorization("Price"), [bearer] * (2 + 3))

    def test_python_without_token_sends_no_authorization(self):
        for make in self.each_client():
            with make(self.plain.target) as client:
                client.devices()
            self.assertEqual(self.plain.authorization("ListDevices"), [None])

    def test_python_pem_errors_name_the_parameter_and_path(self):
        missing = self.path("missing.pem")
        for make in self.each_client():
            with self.assertRaisesRegex(FileNotFoundError,
                                        f"tls_ca: cannot read {re.escape(missing)}"):
                make(self.plain.target, tls_ca=missing)
            with self.assertRaisesRegex(ValueError, "tls_cert: .* is not PEM"):
                make(self.plain.target, tls_cert=self.path("not.pem", "secret"),
                     tls_key=b"-----BEGIN PRIVATE KEY-----")
            with self.assertRaisesRegex(ValueError, "tls_cert and tls_key go together"):
                make(self.plain.target, tls_cert=b"-----BEGIN CERTIFICATE-----")

    def test_python_mutual_tls_with_paths_and_bytes(self):
        c = self.certificates
        for make in self.each_client():
            with make(self.tls.target, token=TOKEN, tls_ca=c["ca.pem"],
                      tls_cert=c["client.pem"], tls_key=read_bytes(c["client.key"]),
                      tls_server_name=SERVER_NAME) as client:
                self.assertEqual(client.devices().server_version, "9.8.7 (test)")
            self.assertEqual(self.tls.authorization("ListDevices"), ["Bearer " + TOKEN])
            refused = {
                "no client certificate": {"tls_ca": c["ca.pem"]},
                "another server name": {"tls_ca": c["ca.pem"], "tls_cert": c["client.pem"],
                                        "tls_key": c["client.key"],
                                        "tls_server_name": "other.test"},
                "the system roots": {"tls_cert": c["client.pem"], "tls_key": c["client.key"]},
            }
            for case, arguments in refused.items():
                with self.subTest(case=case), make(self.tls.target, **arguments) as client:
                    with self.assertRaises(PricerError) as error:
                        client.devices()
                    self.assertEqual(error.exception.code, grpc.StatusCode.UNAVAILABLE)
            self.assertEqual(len(self.tls.calls), 1)

    # The CLI.

    def test_cli_version(self):
        proc = self.pricer("--version")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"^pricer \d+\.\d+\.\d+ \((cuda|cpu only)\)\n$")

    def test_cli_connection_flags_before_and_after_the_verb(self):
        token_file = self.path("token", f"\n  {TOKEN}\n\n")
        before = self.pricer("--token-file", token_file, "devices", "--target", self.plain.target)
        after = self.pricer("devices", "--target", self.plain.target, "--token-file", token_file)
        for proc in (before, after):
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("server version: 9.8.7 (test)\n", proc.stdout)
        self.assertEqual(self.plain.authorization("ListDevices"), ["Bearer " + TOKEN] * 2)

    def test_cli_token_from_the_environment(self):
        token_file = self.path("token", "from-file\n")
        target = ["--target", self.plain.target]
        cases = [({"PRICER_TOKEN": " from-env\n"}, [], "Bearer from-env"),
                 ({"PRICER_TOKEN_FILE": token_file}, [], "Bearer from-file"),
                 # --token-file wins over PRICER_TOKEN.
                 ({"PRICER_TOKEN": "from-env"}, ["--token-file", token_file], "Bearer from-file"),
                 ({}, [], None)]
        for env, flags, _ in cases:
            proc = self.pricer("devices", *target, *flags, env=env)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.plain.authorization("ListDevices"), [want for _, _, want in cases])

    def test_cli_token_goes_with_price_upload_and_their_retries(self):
        token_file = self.path("token", TOKEN)
        np.save(self.path("a.npy"), np.ones((2, 3), dtype=np.float32))
        self.plain.price_failures = 1
        target = ["--target", self.plain.target, "--token-file", token_file]
        upload = self.pricer("upload", self.path("a.npy"), *target)
        self.assertEqual(upload.returncode, 0, upload.stderr)
        price = self.pricer("price", "--issuers", "1", "--paths", "1", "--scenarios", "12",
                            "--split", "2", "--full-out", self.path("sc.npy"), *target)
        self.assertEqual(price.returncode, 0, price.stderr)
        self.assertIn("retry 1 of 3", price.stderr)
        bearer = "Bearer " + TOKEN
        self.assertEqual(self.plain.authorization("UploadScenarios"), [bearer])
        self.assertEqual(self.plain.authorization("Price"), [bearer] * 3)

    def test_cli_bad_token_file_and_pem_are_named(self):
        missing = self.path("missing")
        proc = self.pricer("devices", "--token-file", missing, "--target", self.plain.target)
        self.assertEqual(proc.returncode, 2)
        self.assertIn(f"pricer: --token-file: cannot open {missing}: No such file", proc.stderr)
        proc = self.pricer("health", "--tls-ca", missing, "--target", self.plain.target)
        self.assertEqual(proc.returncode, 1)
        self.assertIn(f"pricer: 5 NOT_FOUND: --tls-ca: cannot open {missing}", proc.stderr)
        self.assertEqual(self.plain.calls, [])

    def test_cli_health(self):
        target = ["--target", self.plain.target]
        serving = self.pricer("health", *target)
        self.assertEqual((serving.returncode, serving.stdout), (0, "SERVING\n"), serving.stderr)
        pricer = self.pricer("health", "--service", "pricer.v1.Pricer", *target)
        self.assertEqual((pricer.returncode, pricer.stdout), (1, "NOT_SERVING\n"), pricer.stderr)
        unknown = self.pricer("health", "--service", "no.such.Service", *target)
        self.assertEqual(unknown.returncode, 1)
        self.assertEqual(unknown.stderr, "pricer: 5 NOT_FOUND: unknown service no.such.Service\n")
        down = self.pricer("health", "--target", "127.0.0.1:1")
        self.assertEqual(down.returncode, 1)
        self.assertRegex(down.stderr, r"^pricer: 14 UNAVAILABLE: ")

    def test_cli_health_over_mutual_tls(self):
        proc = self.pricer("health", "--target", self.tls.target, *self.tls_flags())
        self.assertEqual((proc.returncode, proc.stdout), (0, "SERVING\n"), proc.stderr)
        # Plain text to a TLS server, or a name the certificate does not
        # have: the handshake fails.
        for flags in ([], self.tls_flags(server_name="other.test")):
            proc = self.pricer("health", "--target", self.tls.target, *flags)
            self.assertEqual(proc.returncode, 1)
            self.assertRegex(proc.stderr, r"^pricer: 14 UNAVAILABLE: ")

    def test_cli_price_over_mutual_tls_with_token(self):
        token_file = self.path("token", TOKEN)
        proc = self.pricer("price", "--issuers", "1", "--paths", "1", "--scenarios", "4",
                           "--full-out", self.path("sc.npy"), "--target", self.tls.target,
                           *self.tls_flags(), "--token-file", token_file)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.tls.authorization("Price"), ["Bearer " + TOKEN])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pricer", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
