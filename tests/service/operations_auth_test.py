"""Who may call: TLS with a server certificate and with client certificates
required (the Python client too), bearer tokens from a tokens file, the
calls counted per client, and a tokens file readable by others refused."""

import inspect
import os
import tempfile
import time

import grpc

from pricer_client._proto import pricer_pb2, pricer_pb2_grpc
import pricer_client

import pricerd_process
from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process
from metrics_scrape import Samples, scrape
from pricer_calls import OK, call_status, price, small_request
from pricerd_process import OperationsTestCase, bearer, run_pricerd, write_tokens
from standard_services import SERVING, health_check, listed_services
from tls_material import make_certificates, read_bytes


class TlsTest(OperationsTestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        cls.files = make_certificates(cls.folder.name)

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def list_devices(self, target, credentials=None):
        stub = pricer_pb2_grpc.PricerStub(self.channel(target, credentials))
        code, details, _ = call_status(stub.ListDevices, pricer_pb2.ListDevicesRequest(),
                                       timeout=10)
        return code, details

    def tls_flags(self, client_ca=False):
        flags = ["--tls-cert", self.files["server.pem"], "--tls-key", self.files["server.key"]]
        return flags + (["--tls-client-ca", self.files["ca.pem"]] if client_ca else [])

    def test_server_certificate(self):
        server = self.start_server(*self.tls_flags())
        ca = read_bytes(self.files["ca.pem"])
        self.assertEqual(self.list_devices(server.target)[0], grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(self.list_devices(
            server.target, grpc.ssl_channel_credentials(root_certificates=ca)), (OK, ""))
        # A CA that did not sign the server's certificate is refused.
        other = grpc.ssl_channel_credentials(root_certificates=read_bytes(self.files["client.pem"]))
        self.assertEqual(self.list_devices(server.target, other)[0], grpc.StatusCode.UNAVAILABLE)
        stub = pricer_pb2_grpc.PricerStub(
            self.channel(server.target, grpc.ssl_channel_credentials(root_certificates=ca)))
        self.assertCall(price(stub, small_request()), OK)

    def test_client_certificate_required(self):
        server = self.start_server(*self.tls_flags(client_ca=True))
        ca = read_bytes(self.files["ca.pem"])
        self.assertEqual(self.list_devices(server.target)[0], grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(self.list_devices(
            server.target, grpc.ssl_channel_credentials(root_certificates=ca))[0],
            grpc.StatusCode.UNAVAILABLE)
        with_certificate = grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=read_bytes(self.files["client.key"]),
            certificate_chain=read_bytes(self.files["client.pem"]))
        self.assertEqual(self.list_devices(server.target, with_certificate), (OK, ""))

    def test_python_client_with_tls_and_token(self):
        wanted = {"tls_ca", "tls_cert", "tls_key", "token"}
        missing = wanted - set(inspect.signature(pricer_client.Client).parameters)
        if missing:
            self.skipTest("pricer_client.Client has no %s yet" % ", ".join(sorted(missing)))
        tokens_file, tokens = write_tokens(self.directory())
        server = self.start_server(*self.tls_flags(client_ca=True), "--auth-tokens-file",
                                   tokens_file)
        with pricer_client.Client(server.target, tls_ca=self.files["ca.pem"],
                                  tls_cert=self.files["client.pem"],
                                  tls_key=self.files["client.key"],
                                  token=tokens["bob"]) as client:
            self.assertEqual(client.devices().devices[0].name, "cpu0")
            result = client.price(issuers=4, paths=1000, scenarios=100, statistics=["mean"],
                                  priority=5)
            self.assertEqual(result.statistics["mean"].shape, (100,))
        with pricer_client.Client(server.target, tls_ca=self.files["ca.pem"],
                                  tls_cert=self.files["client.pem"],
                                  tls_key=self.files["client.key"]) as client:
            with self.assertRaises(pricer_client.PricerError) as refused:
                client.devices()
            self.assertEqual(refused.exception.code, grpc.StatusCode.UNAUTHENTICATED)


class TokenTest(OperationsTestCase):
    def test_tokens(self):
        tokens_file, tokens = write_tokens(self.directory())
        server = self.start_server("--auth-tokens-file", tokens_file)
        channel = self.channel(server.target)
        stub = pricer_pb2_grpc.PricerStub(channel)
        alice = tokens["alice"]
        wrong = alice[:-1] + ("0" if alice[-1] != "0" else "1")
        refused = {"none": None, "wrong token, same length": bearer(wrong),
                   "longer token": bearer(alice + "0"), "shorter token": bearer(alice[:8])}
        for case, metadata in refused.items():
            with self.subTest(case=case):
                code, _, _ = call_status(stub.ListDevices, pricer_pb2.ListDevicesRequest(),
                                         metadata=metadata, timeout=10)
                self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED)
                self.assertCall(price(stub, small_request(), metadata=metadata),
                                grpc.StatusCode.UNAUTHENTICATED)

        for _ in range(2):
            stub.ListDevices(pricer_pb2.ListDevicesRequest(), metadata=bearer(alice), timeout=10)
        stub.ListDevices(pricer_pb2.ListDevicesRequest(), metadata=bearer(tokens["bob"]),
                         timeout=10)
        call = price(stub, small_request(), metadata=bearer(alice))
        self.assertCall(call, OK)
        # Health and reflection need no token.
        self.assertEqual(health_check(channel, ""), (OK, SERVING))
        self.assertIn("pricer.v1.Pricer", listed_services(channel))

        # The calls are counted per client named in the tokens file (a call's
        # counters may be updated just after its status reached us).
        time.sleep(scaled(0.3))
        s = Samples(scrape(server))
        calls = "pricer_client_calls_total"
        self.assertEqual(s.total(calls, client="alice", method="ListDevices"), 2)
        self.assertEqual(s.total(calls, client="alice", method="Price"), 1)
        self.assertEqual(s.total(calls, client="bob", method="ListDevices"), 1)
        self.assertEqual(s.total("pricer_client_flops_total", client="alice"),
                         call.finished()[0].flops)
        self.assertEqual(s.total("pricer_client_flops_total", client="bob", default=0), 0)
        self.assertEqual(
            s.total("pricer_calls_total", method="ListDevices", code="UNAUTHENTICATED"),
            len(refused))

    def test_tokens_file_readable_by_others_is_refused(self):
        folder = self.directory()
        tokens_file, _ = write_tokens(folder, mode=0o644)
        code, out = run_pricerd("--listen", "127.0.0.1:0", "--metrics-listen", "",
                                "--auth-tokens-file", tokens_file)
        self.assertIsNotNone(code, "pricerd started with a world-readable tokens file")
        self.assertGreater(code, 0, out)
        self.assertIn(tokens_file, out)
        # Group-readable is the operator's choice (mode & 0o007 is what counts).
        os.chmod(tokens_file, 0o640)
        server = self.start_server("--auth-tokens-file", tokens_file)
        self.assertEqual(health_check(self.channel(server.target), ""), (OK, SERVING))


if __name__ == "__main__":
    pricerd_process.main()
