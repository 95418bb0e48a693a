"""Production operations of a real pricerd process, end to end: signals and
the graceful drain, listen errors, health, reflection, Prometheus metrics
(checked with promtool and scraped by a real Prometheus), TLS and client
certificates, bearer tokens, per-client fairness and quotas, priorities, and
the text and JSON logs. Every test starts its own pricerd on 127.0.0.1 with
free ports and stops it; all traffic stays on loopback."""

import inspect
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

import grpc
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from pricer.v1 import pricer_pb2, pricer_pb2_grpc
import pricer_client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

ARGS = None
OK = grpc.StatusCode.OK
METRICS_LINE = r"metrics on http://[^:]+:(\d+)/metrics"
SERVING, NOT_SERVING = 1, 2  # grpc.health.v1.HealthCheckResponse.ServingStatus
CRASH_CODES = (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS, 128 + signal.SIGABRT,
               128 + signal.SIGSEGV)


def server_environment(extra=None):
    """The test's environment without PRICER_* settings (every flag reads
    one) and without thread limits: OpenBLAS runs multi-threaded, its default."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PRICER_") and k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env.update(extra or {})
    return env


class Server:
    """pricerd on 127.0.0.1 with a free port (and a free metrics port unless
    metrics=False), its output in a file."""

    def __init__(self, flags=(), metrics=True, env=None):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.final_output = None  # what pricerd wrote, once stopped
        self.command = [ARGS.pricerd, "--listen", "127.0.0.1:0",
                        "--metrics-listen", "127.0.0.1:0" if metrics else "",
                        "--devices", "cpu", "--device-memory", "1GiB", *flags]
        self.proc = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=server_environment(env))
        self.port = self._wait_for(r"\(port (\d+)\)")
        self.metrics_port = self._wait_for(METRICS_LINE) if metrics else None
        self.target = "127.0.0.1:%d" % self.port

    def _wait_for(self, pattern, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(pattern, self.output())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError("pricerd exited with %d: %s\n%s" % (
                    self.proc.returncode, " ".join(self.command), self.output()))
            time.sleep(0.05)
        raise RuntimeError("pricerd printed no /%s/ in %d s:\n%s" % (
            pattern, timeout, self.output()))

    def output(self):
        if self.final_output is not None:
            return self.final_output
        with open(self.log.name) as f:
            return f.read()

    def signal(self, number):
        self.proc.send_signal(number)

    def stop(self):
        """SIGTERM, and pricerd must exit 0 (a second SIGTERM, then SIGKILL, if
        it hangs). Once stopped, output() keeps what it wrote."""
        if self.final_output is not None:
            return
        try:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.proc.terminate()
                    try:
                        self.proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        self.proc.kill()
                        self.proc.wait()
                    raise AssertionError("pricerd did not exit within 15 s of SIGTERM:\n" +
                                         self.output()[-4000:])
                if self.proc.returncode != 0:
                    raise AssertionError("pricerd exited with %d after SIGTERM:\n%s" % (
                        self.proc.returncode, self.output()[-4000:]))
        finally:
            self.final_output = self.output()
            self.log.close()
            os.unlink(self.log.name)


def run_pricerd(*flags, timeout=20, env=None):
    """pricerd expected to exit by itself (refused flags, --version): its
    return code and output; a pricerd still running after `timeout` is killed
    and reported as None."""
    command = [ARGS.pricerd, *flags]
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, env=server_environment(env))
    except subprocess.TimeoutExpired as e:
        out = e.output.decode() if isinstance(e.output, bytes) else (e.output or "")
        return None, out
    return proc.returncode, proc.stdout


# ---- requests and calls ----

def price_request(issuers, paths, columns, *, seed=1, full=False, mean=True,
                  terminal_prices=False, priority=0, maturity=1.0):
    """Explicit issuers (spot 5 + 0.01 i, volatility 0.1 + 0.3 i / N),
    generated U(0,1) scenario columns; statistics mean unless full."""
    request = pricer_pb2.PriceRequest(paths=paths, seed=seed, rate=0.01, maturity=maturity,
                                      priority=priority)
    request.market.explicit.spot.extend(5.0 + 0.01 * i for i in range(issuers))
    request.market.explicit.volatility.extend(0.1 + 0.3 * i / issuers for i in range(issuers))
    request.scenarios.generated.columns = columns
    request.scenarios.generated.seed = seed + 1
    request.scenarios.generated.value_max = 1.0
    request.output.full = full
    if mean:
        request.output.statistics.mean = True
    request.output.terminal_prices = terminal_prices
    return request


def small_request(**kwargs):
    return price_request(4, 1000, 100, **kwargs)


def long_request():
    """A stats-mode job of many short shards (P N small, 256-column aligned
    shards of ~64 MiB of SC each): tens of seconds of work on two cores."""
    return price_request(8, 2000, 40_000_000)


def bearer(token):
    return (("authorization", "Bearer " + token),)


def call_status(function, *args, **kwargs):
    """(code, details, reply) of a unary call."""
    try:
        return OK, "", function(*args, **kwargs)
    except grpc.RpcError as error:
        return error.code(), error.details(), None


class CallReader(threading.Thread):
    """Reads one Price stream on its own thread: the replies (chunks go to
    on_chunk when given, else are kept), when each chunk came, the serialized
    bytes received, and how the call ended."""

    def __init__(self, call, on_chunk=None):
        super().__init__(daemon=True)
        self.call = call
        self.on_chunk = on_chunk
        self.accepted = None
        self.replies = []
        self.chunk_times = []
        self.streamed_bytes = 0
        self.code = None
        self.details = ""
        self.started_at = time.time()
        self.ended_at = None
        self._accepted_or_ended = threading.Event()
        self.start()

    def run(self):
        try:
            for reply in self.call:
                self.streamed_bytes += reply.ByteSize()
                kind = reply.WhichOneof("kind")
                if kind == "accepted":
                    self.accepted = reply.accepted
                    self._accepted_or_ended.set()
                if kind == "chunk":
                    self.chunk_times.append(time.time())
                    if self.on_chunk is not None:
                        self.on_chunk(reply.chunk)
                        continue
                self.replies.append(reply)
            self.code = OK
        except grpc.RpcError as error:
            self.code, self.details = error.code(), error.details()
        except Exception as error:  # an on_chunk failure: reported as the call's result
            self.code, self.details = "exception", repr(error)
            self.call.cancel()
        finally:
            self.ended_at = time.time()
            self._accepted_or_ended.set()

    def wait_accepted(self, test, timeout=60):
        self._accepted_or_ended.wait(timeout)
        test.assertIsNotNone(self.accepted,
                             "no `accepted` reply: %s %s" % (self.code, self.details))
        return self.accepted

    def finish(self, timeout=120):
        self.join(timeout)
        if self.is_alive():
            self.call.cancel()
            self.join(10)
            raise AssertionError("the Price call did not end within %d s" % timeout)
        return self

    def finished(self):
        return [r.finished for r in self.replies if r.WhichOneof("kind") == "finished"]


def price(stub, request, metadata=None, timeout=120):
    """One Price call to its end."""
    return CallReader(stub.Price(request, metadata=metadata, timeout=timeout)).finish(timeout + 10)


# ---- grpc.health.v1 by hand: HealthCheckRequest{string service = 1},
# HealthCheckResponse{enum status = 1} ----

def _varint(value):
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def encode_health_request(service):
    data = service.encode()
    return b"\x0a" + _varint(len(data)) + data if data else b""


def decode_health_status(data):
    """Field 1 (varint) of a HealthCheckResponse; 0 (UNKNOWN) when absent."""
    status, at = 0, 0
    while at < len(data):
        key, at = _read_varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _read_varint(data, at)
            if field == 1:
                status = value
        elif wire == 2:
            length, at = _read_varint(data, at)
            at += length
        elif wire == 5:
            at += 4
        elif wire == 1:
            at += 8
        else:
            raise ValueError("wire type %d in a HealthCheckResponse" % wire)
    return status


def _read_varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def health_check(channel, service="", timeout=10):
    """(code, status) of Health/Check."""
    check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                request_serializer=encode_health_request,
                                response_deserializer=decode_health_status)
    code, _, status = call_status(check, service, timeout=timeout)
    return code, status


def health_watch(channel, service="", timeout=20):
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch",
                                 request_serializer=encode_health_request,
                                 response_deserializer=decode_health_status)
    return watch(service, timeout=timeout)


# ---- server reflection (grpc.reflection.v1alpha), from our own minimal .proto ----

_reflection_pb2 = None


def reflection_pb2():
    """The messages of server_reflection.proto, compiled once into a
    temporary folder (python3 -m grpc_tools.protoc)."""
    global _reflection_pb2
    if _reflection_pb2 is None:
        out = tempfile.mkdtemp(prefix="pricer-reflection-")
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "--proto_path=" + HERE,
                        "--python_out=" + out, os.path.join(HERE, "server_reflection.proto")],
                       check=True, capture_output=True, timeout=60)
        sys.path.insert(0, out)
        import server_reflection_pb2
        _reflection_pb2 = server_reflection_pb2
    return _reflection_pb2


def reflection_exchange(channel, requests, timeout=20):
    """Sends the ServerReflectionRequests on one stream; the responses."""
    pb = reflection_pb2()
    info = channel.stream_stream(
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        request_serializer=pb.ServerReflectionRequest.SerializeToString,
        response_deserializer=pb.ServerReflectionResponse.FromString)
    return list(info(iter(requests), timeout=timeout))


def listed_services(channel):
    pb = reflection_pb2()
    (response,) = reflection_exchange(channel, [pb.ServerReflectionRequest(list_services="")])
    return [s.name for s in response.list_services_response.service]


def _in_pool(pool, name):
    try:
        pool.FindFileByName(name)
        return True
    except KeyError:
        return False


def message_class(pool, descriptor):
    get = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22
    if get is not None:
        return get(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


# ---- metrics ----

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(server):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % server.metrics_port,
                                timeout=10) as response:
        return response.read().decode()


class Samples:
    """A Prometheus text exposition: its samples and its # TYPE lines."""

    def __init__(self, text):
        self.text = text
        self.samples = []
        self.types = {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(None, 3)
                self.types[name] = kind.strip()
            elif line and not line.startswith("#"):
                m = _SAMPLE.match(line)
                if not m:
                    raise AssertionError("not a sample line: %r" % line)
                labels = dict(_LABEL.findall(m.group(2) or ""))
                self.samples.append((m.group(1), labels, float(m.group(3))))

    def series(self, name, **labels):
        return [(l, v) for n, l, v in self.samples
                if n == name and all(l.get(k) == str(x) for k, x in labels.items())]

    def total(self, name, default=None, **labels):
        """The sum over the series of `name` with these labels; with no such
        series, `default`, or an AssertionError when that is None."""
        found = self.series(name, **labels)
        if not found:
            if default is None:
                raise AssertionError("no series %s%s in the scrape:\n%s" % (
                    name, labels, "\n".join(l for l in self.text.splitlines() if name in l)))
            return default
        return sum(v for _, v in found)

    def type_of(self, family):
        return self.types.get(family, self.types.get(family.removesuffix("_total")))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A real Prometheus on loopback scraping one pricerd every second."""

    def __init__(self, metrics_port, directory):
        self.port = free_port()
        config = os.path.join(directory, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: pricerd\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % metrics_port)
        self.log = open(os.path.join(directory, "prometheus.log"), "w+")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(directory, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=self.log, stderr=subprocess.STDOUT)
        ready = "http://127.0.0.1:%d/-/ready" % self.port
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(ready, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise RuntimeError("prometheus did not become ready:\n" + self._output())
            time.sleep(0.2)

    def _output(self):
        self.log.seek(0)
        return self.log.read()[-4000:]

    def query(self, expression):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (
            self.port, urllib.parse.urlencode({"query": expression}))
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.load(response)
        if body.get("status") != "success":
            raise AssertionError("query %s: %s" % (expression, body))
        return body["data"]["result"]

    def value(self, expression):
        """The single value of an instant vector query."""
        result = self.query(expression)
        if len(result) != 1:
            raise AssertionError("query %s gave %d series: %s" % (expression, len(result), result))
        return float(result[0]["value"][1])

    def wait_for_scrape_after(self, moment, timeout=30):
        """Until Prometheus holds a sample of pricerd scraped after `moment`."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            result = self.query("timestamp(pricer_build_info)")
            if result and float(result[0]["value"][1]) > moment:
                return
            time.sleep(0.25)
        raise AssertionError("no scrape after the workload within %d s:\n%s" % (
            timeout, self._output()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# ---- TLS material and token files ----

OPENSSL_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = pricer test
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
[client]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
"""


def make_certificates(directory):
    """A CA, a server certificate for 127.0.0.1 and localhost, and a client
    certificate, all P-256; returns {name: path} for ca.pem, server.pem,
    server.key, client.pem, client.key."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60,
                       cwd=directory)

    with open(os.path.join(directory, "openssl.cnf"), "w") as f:
        f.write(OPENSSL_CONFIG)
    for name in ("ca", "server", "client"):
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-out", name + ".key")
        os.chmod(os.path.join(directory, name + ".key"), 0o600)
    openssl("req", "-x509", "-new", "-key", "ca.key", "-config", "openssl.cnf", "-extensions", "ca",
            "-subj", "/CN=pricer test CA", "-days", "2", "-out", "ca.pem")
    for name, subject in (("server", "/CN=localhost"), ("client", "/CN=pricer test client")):
        openssl("req", "-new", "-key", name + ".key", "-config", "openssl.cnf", "-subj", subject,
                "-out", name + ".csr")
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", "openssl.cnf", "-extensions", name,
                "-out", name + ".pem")
    return {name: os.path.join(directory, name)
            for name in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_tokens(directory, mode=0o600):
    """A tokens file for alice (max priority 0) and bob (max priority 10):
    its path and {client: token}."""
    tokens = {"alice": secrets.token_hex(16), "bob": secrets.token_hex(16)}
    path = os.path.join(directory, "tokens")
    with open(path, "w") as f:
        f.write("# client-name token [max-priority]\n\n")
        f.write("alice %s 0\n" % tokens["alice"])
        f.write("bob %s 10\n" % tokens["bob"])
    os.chmod(path, mode)
    return path, tokens


class OperationsTestCase(unittest.TestCase):
    """Servers, channels and folders that clean themselves up."""

    def start_server(self, *flags, metrics=True, env=None):
        server = Server(flags, metrics=metrics, env=env)
        self.addCleanup(server.stop)
        return server

    def channel(self, target, credentials=None):
        channel = (grpc.secure_channel(target, credentials) if credentials is not None
                   else grpc.insecure_channel(target))
        self.addCleanup(channel.close)
        return channel

    def stub(self, server):
        return pricer_pb2_grpc.PricerStub(self.channel(server.target))

    def directory(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        return folder.name

    def assertCall(self, reader, code, *message_parts):
        self.assertEqual(reader.code, code, reader.details)
        for part in message_parts:
            self.assertRegex(reader.details, part)


# ---- the tests ----

class StartupTest(OperationsTestCase):
    def test_version(self):
        code, out = run_pricerd("--version")
        self.assertEqual(code, 0, out)
        self.assertRegex(out.strip(), r"^pricerd 0\.1\.0 \((cpu only|cuda)\)$")
        # The same string comes back in ListDevices.
        server = self.start_server()
        devices = self.stub(server).ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10)
        self.assertEqual(out.strip(), "pricerd " + devices.server_version)

    def test_bad_log_level_and_format_refused(self):
        for flags, env, value in ((("--log-level", "loud"), None, "loud"),
                                  ((), {"PRICER_LOG_LEVEL": "chatty"}, "chatty"),
                                  (("--log-format", "yaml"), None, "yaml")):
            with self.subTest(flags=flags, env=env):
                code, out = run_pricerd("--listen", "127.0.0.1:0", "--metrics-listen", "", *flags,
                                        env=env)
                self.assertIsNotNone(code, "pricerd kept running: " + out)
                self.assertGreater(code, 0, out)
                self.assertIn(value, out)

    def test_listen_errors_exit_nonzero_naming_the_address(self):
        for address in ("nonsense", "127.0.0.1:99999", "127.0.0.1:-1", "10.255.255.1:50051"):
            with self.subTest(address=address):
                code, out = run_pricerd("--listen", address, "--metrics-listen", "",
                                        "--devices", "cpu", "--device-memory", "1GiB")
                self.assertIsNotNone(code, "pricerd kept running on %s: %s" % (address, out))
                self.assertGreater(code, 0, out)
                self.assertNotIn(code, CRASH_CODES, out)
                self.assertIn(address, out)

    def test_second_server_on_a_busy_port_exits_and_the_first_serves_on(self):
        first = self.start_server()
        address = "127.0.0.1:%d" % first.port
        code, out = run_pricerd("--listen", address, "--metrics-listen", "", "--devices", "cpu",
                                "--device-memory", "1GiB")
        self.assertIsNotNone(code, "a second pricerd kept running on " + address)
        self.assertGreater(code, 0, out)
        self.assertNotIn(code, CRASH_CODES, out)
        self.assertIn(address, out)
        stub = self.stub(first)
        for _ in range(5):  # with SO_REUSEPORT some would reach the second
            self.assertEqual(stub.ListDevices(pricer_pb2.ListDevicesRequest(),
                                              timeout=10).devices[0].name, "cpu0")
        self.assertCall(price(stub, small_request()), OK)
        self.assertIsNone(first.proc.poll())


class HealthTest(OperationsTestCase):
    def test_check_and_watch(self):
        server = self.start_server()
        channel = self.channel(server.target)
        for service in ("", "pricer.v1.Pricer"):
            with self.subTest(service=service):
                self.assertEqual(health_check(channel, service), (OK, SERVING))
                watch = health_watch(channel, service)
                self.assertEqual(next(watch), SERVING)
                watch.cancel()
        code, _ = health_check(channel, "no.such.Service")
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND)

    def test_pricer_health_cli(self):
        help_text = subprocess.run([ARGS.pricer, "health", "--help"], capture_output=True,
                                   text=True, timeout=30)
        if help_text.returncode != 0 or not re.search(r"Usage: \S+ health", help_text.stdout):
            self.skipTest("`pricer health` is not in this pricer build:\n" + help_text.stdout[:300])

        def health(target):
            return subprocess.run([ARGS.pricer, "health", "--target", target],
                                  capture_output=True, text=True, timeout=60)

        server = self.start_server()
        proc = health(server.target)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        # Draining: NOT_SERVING, non-zero.
        reader = CallReader(self.stub(server).Price(long_request(), timeout=60))
        reader.wait_accepted(self)
        server.signal(signal.SIGTERM)
        time.sleep(0.3)
        proc = health(server.target)
        self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIsNone(server.proc.poll(), "pricerd should still be draining")
        server.signal(signal.SIGTERM)
        server.proc.wait(timeout=10)
        reader.finish(30)
        # Nothing listens.
        proc = health(server.target)
        self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)


class ReflectionTest(OperationsTestCase):
    def test_generic_client_calls_list_devices(self):
        server = self.start_server()
        channel = self.channel(server.target)
        services = listed_services(channel)
        self.assertIn("pricer.v1.Pricer", services)
        self.assertIn("grpc.health.v1.Health", services)

        pb = reflection_pb2()
        (response,) = reflection_exchange(
            channel, [pb.ServerReflectionRequest(file_containing_symbol="pricer.v1.Pricer")])
        self.assertEqual(response.WhichOneof("message_response"), "file_descriptor_response",
                         response)
        files = [descriptor_pb2.FileDescriptorProto.FromString(data)
                 for data in response.file_descriptor_response.file_descriptor_proto]
        self.assertIn("pricer.v1", [f.package for f in files])

        # A pool of our own: nothing from pricer_pb2 is used to make the call.
        pool = descriptor_pool.DescriptorPool()
        pending = list(files)
        while pending:
            ready = [f for f in pending
                     if all(_in_pool(pool, d) for d in f.dependency)]
            self.assertTrue(ready, "unresolved imports: %s" % [f.name for f in pending])
            for f in ready:
                pool.Add(f)
                pending.remove(f)
        method = pool.FindServiceByName("pricer.v1.Pricer").methods_by_name["ListDevices"]
        request_class = message_class(pool, method.input_type)
        reply_class = message_class(pool, method.output_type)
        self.assertIsNot(reply_class, pricer_pb2.ListDevicesReply)
        list_devices = channel.unary_unary("/pricer.v1.Pricer/ListDevices",
                                           request_serializer=request_class.SerializeToString,
                                           response_deserializer=reply_class.FromString)
        reply = list_devices(request_class(), timeout=10)
        self.assertEqual([d.name for d in reply.devices], ["cpu0"])
        self.assertEqual(reply.devices[0].kind, "cpu")
        self.assertEqual(reply.devices[0].memory_budget_bytes, 1 << 30)

        # An unknown symbol: an error response, NOT_FOUND (5).
        (response,) = reflection_exchange(
            channel, [pb.ServerReflectionRequest(file_containing_symbol="pricer.v1.Nothing")])
        self.assertEqual(response.WhichOneof("message_response"), "error_response")
        self.assertEqual(response.error_response.error_code, grpc.StatusCode.NOT_FOUND.value[0])


class MetricsTest(OperationsTestCase):
    """One workload on one server, then its metrics: scraped directly, checked
    by promtool, and scraped by a real Prometheus."""

    ISSUERS, PATHS, COLUMNS = 6, 100_000, 700  # 256-column shards: 3 per call

    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        try:
            cls._workload()
        except BaseException:
            cls.server.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    @classmethod
    def _workload(cls):
        channel = grpc.insecure_channel(cls.server.target)
        stub = pricer_pb2_grpc.PricerStub(channel)
        cls.calls = [price(stub, price_request(cls.ISSUERS, cls.PATHS, cls.COLUMNS, seed=s))
                     for s in (1, 2, 3)]
        for call in cls.calls:
            if call.code != OK or len(call.finished()) != 1:
                raise AssertionError("workload call: %s %s" % (call.code, call.details))
        refused = price(stub, price_request(cls.ISSUERS, cls.PATHS, cls.COLUMNS, maturity=-1))
        if refused.code != grpc.StatusCode.INVALID_ARGUMENT or refused.replies:
            raise AssertionError("refused call: %s %s" % (refused.code, refused.details))
        matrix = np.arange(cls.ISSUERS * 300, dtype="<f4") / 1000
        stub.UploadScenarios(iter([pricer_pb2.ScenarioChunk(rows=cls.ISSUERS, columns=300,
                                                            values=matrix.tobytes())]),
                             timeout=30)
        # A call's counters may be updated just after its status reached us,
        # and a job's memory freed just after its end.
        time.sleep(0.5)
        stub.ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10)
        cls.devices = stub.ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10)
        channel.close()
        cls.flops = 3 * 2 * cls.PATHS * cls.ISSUERS * cls.COLUMNS
        cls.shards = sum(c.accepted.plan.shard_count for c in cls.calls)
        cls.streamed = sum(c.streamed_bytes for c in cls.calls)
        time.sleep(0.3)
        cls.workload_end = time.time()

    def test_workload_is_what_the_test_assumes(self):
        self.assertGreater(self.shards, 3)
        self.assertEqual(sum(c.finished()[0].flops for c in self.calls), self.flops)

    def test_promtool_accepts_the_scrape(self):
        if shutil.which("promtool") is None:
            self.skipTest("promtool is not installed")
        text = scrape(self.server)
        proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual((proc.returncode, proc.stdout + proc.stderr), (0, ""))

    def test_scrape_types(self):
        samples = Samples(scrape(self.server))
        expected = {"counter": ["pricer_calls_total", "pricer_client_calls_total",
                                "pricer_client_flops_total", "pricer_shards_total",
                                "pricer_flops_total", "pricer_streamed_bytes_total",
                                "pricer_device_busy_seconds_total", "pricer_upload_bytes_total"],
                    "gauge": ["pricer_queue_wait_average_seconds", "pricer_jobs",
                              "pricer_device_memory_budget_bytes",
                              "pricer_device_memory_in_use_bytes",
                              "pricer_device_memory_peak_bytes", "pricer_pending_chunk_bytes",
                              "pricer_scenario_store_bytes", "pricer_build_info"],
                    "histogram": ["pricer_job_duration_seconds"]}
        for kind, families in expected.items():
            for family in families:
                self.assertEqual(samples.type_of(family), kind, family)

    def test_scrape_counts_the_workload(self):
        s = Samples(scrape(self.server))
        self.assertEqual(s.total("pricer_calls_total", method="Price", code="OK"), 3)
        self.assertEqual(s.total("pricer_calls_total", method="Price", code="INVALID_ARGUMENT"), 1)
        self.assertEqual(s.total("pricer_calls_total", method="ListDevices", code="OK"), 2)
        self.assertEqual(s.total("pricer_calls_total", method="UploadScenarios", code="OK"), 1)
        self.assertEqual(s.total("pricer_calls_total"), 7)
        # Every call is anonymous (no tokens file).
        for method in ("Price", "ListDevices", "UploadScenarios"):
            self.assertEqual(
                s.total("pricer_client_calls_total", client="anonymous", method=method),
                s.total("pricer_calls_total", method=method), method)
        self.assertEqual(s.total("pricer_client_flops_total", client="anonymous"), self.flops)
        self.assertEqual(s.total("pricer_flops_total", device="cpu0"), self.flops)
        self.assertEqual(s.total("pricer_flops_total"), self.flops)
        self.assertEqual(s.total("pricer_shards_total", device="cpu0", result="done"), self.shards)
        self.assertEqual(s.total("pricer_shards_total", result="failed", default=0), 0)
        self.assertEqual(s.total("pricer_shards_total", result="retried", default=0), 0)
        self.assertEqual(s.total("pricer_streamed_bytes_total"), self.streamed)
        self.assertEqual(s.total("pricer_upload_bytes_total"), 4 * self.ISSUERS * 300)
        self.assertEqual(s.total("pricer_scenario_store_bytes"), 4 * self.ISSUERS * 300)

        # Three jobs through each phase; the refused request never was one.
        for phase in ("queued", "running", "total"):
            self.assertEqual(s.total("pricer_job_duration_seconds_count", phase=phase), 3, phase)
            buckets = sorted((float(l["le"]), v) for l, v in
                             s.series("pricer_job_duration_seconds_bucket", phase=phase))
            self.assertEqual(buckets[-1], (float("inf"), 3), phase)
            counts = [v for _, v in buckets]
            self.assertEqual(counts, sorted(counts), phase)
        client_seconds = sum(c.ended_at - c.started_at for c in self.calls)
        total_seconds = s.total("pricer_job_duration_seconds_sum", phase="total")
        self.assertGreater(total_seconds, 0)
        self.assertLessEqual(total_seconds, 3 * 60)
        # The server's clock starts when the call arrives, which may be a few
        # ms before the reader thread notes the time.
        self.assertLess(total_seconds, client_seconds + 0.1)
        self.assertGreaterEqual(s.total("pricer_queue_wait_average_seconds"), 0)
        self.assertEqual(s.total("pricer_jobs", state="queued"), 0)
        self.assertEqual(s.total("pricer_jobs", state="running"), 0)
        self.assertEqual(s.total("pricer_pending_chunk_bytes"), 0)

        # The device series agree with ListDevices taken after the workload.
        device = self.devices.devices[0]
        self.assertEqual(s.total("pricer_device_memory_budget_bytes", device="cpu0"),
                         device.memory_budget_bytes)
        self.assertEqual(s.total("pricer_device_memory_peak_bytes", device="cpu0"),
                         device.peak_bytes)
        self.assertEqual(s.total("pricer_device_memory_in_use_bytes", device="cpu0"),
                         device.bytes_in_use)
        self.assertGreater(device.peak_bytes, 0)
        self.assertEqual(device.shards_done, self.shards)
        self.assertAlmostEqual(s.total("pricer_device_busy_seconds_total", device="cpu0"),
                               device.busy_seconds, delta=1e-6 * device.busy_seconds + 1e-9)
        self.assertGreater(device.busy_seconds, 0)

        (build, value), = s.series("pricer_build_info")
        self.assertEqual(value, 1)
        self.assertEqual(build.get("version"), self.devices.server_version.split()[0])

    def test_prometheus_scrapes_the_workload(self):
        if shutil.which("prometheus") is None:
            self.skipTest("prometheus is not installed")
        prometheus = Prometheus(self.server.metrics_port, self.directory())
        self.addCleanup(prometheus.stop)
        prometheus.wait_for_scrape_after(self.workload_end)
        self.assertEqual(prometheus.value('up{job="pricerd"}'), 1)
        expected = {
            'sum(pricer_calls_total{method="Price",code="OK"})': 3,
            'sum(pricer_calls_total{method="Price",code="INVALID_ARGUMENT"})': 1,
            'sum(pricer_calls_total{method="ListDevices",code="OK"})': 2,
            'sum(pricer_calls_total{method="UploadScenarios",code="OK"})': 1,
            'sum(pricer_client_flops_total{client="anonymous"})': self.flops,
            "sum(pricer_flops_total)": self.flops,
            'sum(pricer_shards_total{result="done"})': self.shards,
            'sum(pricer_shards_total{result="failed"}) or vector(0)': 0,
            "sum(pricer_streamed_bytes_total)": self.streamed,
            'sum(pricer_job_duration_seconds_count{phase="total"})': 3,
            'sum(pricer_jobs{state="running"})': 0,
            "pricer_build_info": 1,
        }
        for expression, value in expected.items():
            self.assertEqual(prometheus.value(expression), value, expression)


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

        # The calls are counted per client named in the tokens file.
        time.sleep(0.3)
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


class FairnessTest(OperationsTestCase):
    def start_with_tokens(self, *flags):
        tokens_file, tokens = write_tokens(self.directory())
        server = self.start_server("--auth-tokens-file", tokens_file, *flags)
        return server, {name: bearer(token) for name, token in tokens.items()}

    def start_jobs(self, stub, metadata, count, request):
        """`count` concurrent Price calls, each read on its own thread; waits
        until each is accepted and cancels them all at cleanup."""
        readers = [CallReader(stub.Price(request, metadata=metadata, timeout=300),
                              on_chunk=lambda chunk: None) for _ in range(count)]
        self.addCleanup(lambda: [r.call.cancel() for r in readers])
        for reader in readers:
            reader.wait_accepted(self)
        return readers

    def cancel_and_wait_idle(self, stub, metadata, readers):
        for reader in readers:
            reader.call.cancel()
        for reader in readers:
            reader.finish(30)
            self.assertEqual(reader.code, grpc.StatusCode.CANCELLED, reader.details)
        deadline = time.time() + 20
        while stub.ListDevices(pricer_pb2.ListDevicesRequest(), metadata=metadata,
                               timeout=10).queued_jobs != 0:
            self.assertLess(time.time(), deadline, "cancelled jobs still queued")
            time.sleep(0.1)

    def test_a_small_client_is_served_next_to_a_busy_one(self):
        server, auth = self.start_with_tokens("--max-queued-jobs", "256",
                                              "--max-jobs-per-client", "64")
        stub_a, stub_b = self.stub(server), self.stub(server)
        stub_b.ListDevices(pricer_pb2.ListDevicesRequest(), metadata=auth["bob"], timeout=10)
        # 119 shards of 8448 columns, ~60 ms of one core each: ~4 s per job
        # alone. Taking turns by job, bob's one shard would wait for up to 63
        # of them (~2 s on two cores); by client, for one.
        a_jobs = self.start_jobs(stub_a, auth["alice"], 63, price_request(100, 2000, 1_000_000))
        self.assertGreaterEqual(a_jobs[0].accepted.plan.shard_count, 100)
        time.sleep(0.3)
        # Three in a row, so that a lucky turn of a job round robin cannot pass.
        for attempt in range(3):
            started = time.time()
            b = price(stub_b, small_request(seed=attempt + 1), metadata=auth["bob"], timeout=60)
            seconds = time.time() - started
            self.assertCall(b, OK)
            self.assertEqual(len(b.finished()), 1)
            self.assertEqual([r.code for r in a_jobs], [None] * 63, "A's jobs ended first")
            self.assertLess(seconds, 0.5, "bob's job %d of one shard next to alice's 63" % attempt)
        self.cancel_and_wait_idle(stub_a, auth["alice"], a_jobs)

    def test_jobs_per_client_quota(self):
        # --max-jobs-per-client 2, and the default max-queued-jobs / 4 = 2.
        for flags in (("--max-jobs-per-client", "2"), ("--max-queued-jobs", "8")):
            with self.subTest(flags=flags):
                server, auth = self.start_with_tokens(*flags)
                stub = self.stub(server)
                a_jobs = self.start_jobs(stub, auth["alice"], 2, long_request())
                third = price(stub, long_request(), metadata=auth["alice"])
                self.assertCall(third, grpc.StatusCode.RESOURCE_EXHAUSTED, r"alice", r"\b2\b")
                self.assertCall(price(stub, small_request(), metadata=auth["bob"]), OK)
                self.cancel_and_wait_idle(stub, auth["alice"], a_jobs)
                # The quota is free again.
                self.assertCall(price(stub, small_request(), metadata=auth["alice"]), OK)
                server.stop()

    def test_pending_flops_per_client(self):
        server, auth = self.start_with_tokens("--max-pending-flops-per-client", "1e12")
        stub = self.stub(server)
        over = price_request(100, 10_000, 1_000_000)  # 2e12 flops
        self.assertCall(price(stub, over, metadata=auth["alice"]),
                        grpc.StatusCode.RESOURCE_EXHAUSTED, r"alice")
        half = price_request(8, 2000, 18_750_000)  # 6e11 flops, ~10 s of work
        a_jobs = self.start_jobs(stub, auth["alice"], 1, half)
        self.assertCall(price(stub, half, metadata=auth["alice"]),
                        grpc.StatusCode.RESOURCE_EXHAUSTED, r"alice")
        # Another client's budget is its own.
        b_jobs = self.start_jobs(stub, auth["bob"], 1, half)
        self.cancel_and_wait_idle(stub, auth["alice"], a_jobs + b_jobs)

    def test_priority_limits(self):
        server, auth = self.start_with_tokens()
        stub = self.stub(server)
        self.assertCall(price(stub, small_request(priority=5), metadata=auth["alice"]),
                        grpc.StatusCode.PERMISSION_DENIED, r"\b5\b", r"\b0\b")
        self.assertCall(price(stub, small_request(priority=5), metadata=auth["bob"]), OK)
        self.assertCall(price(stub, small_request(priority=11), metadata=auth["bob"]),
                        grpc.StatusCode.PERMISSION_DENIED, r"\b11\b", r"\b10\b")
        self.assertCall(price(stub, small_request(priority=-5), metadata=auth["alice"]), OK)

    def test_priority_without_tokens(self):
        stub = self.stub(self.start_server())
        self.assertCall(price(stub, small_request(priority=5)),
                        grpc.StatusCode.PERMISSION_DENIED, r"\b5\b", r"\b0\b")
        self.assertCall(price(stub, small_request(priority=0)), OK)
        self.assertCall(price(stub, small_request(priority=-5)), OK)


class DrainTest(OperationsTestCase):
    # Full output, about 2 s of work on two cores: 7 shards of 4352 columns.
    ISSUERS, PATHS, COLUMNS = 500, 4000, 30_000

    def test_running_call_completes_during_drain(self):
        request = price_request(self.ISSUERS, self.PATHS, self.COLUMNS, seed=7, full=True,
                                mean=False)
        # The reference: the same request on a fresh server, column by column.
        reference_server = self.start_server()
        reference = np.zeros((self.COLUMNS, self.PATHS), dtype="<f4")

        def keep(chunk):
            reference[chunk.column_begin:chunk.column_end] = np.frombuffer(
                chunk.values, dtype="<f4").reshape(-1, self.PATHS)

        call = CallReader(self.stub(reference_server).Price(request, timeout=120), on_chunk=keep)
        self.assertCall(call.finish(), OK)
        reference_server.stop()

        server = self.start_server()
        channel = self.channel(server.target)
        stub = pricer_pb2_grpc.PricerStub(channel)
        watch = health_watch(channel, "")
        self.assertEqual(next(watch), SERVING)
        delivered = np.zeros(self.COLUMNS, dtype=np.int64)
        mismatched = []

        def check(chunk):
            got = np.frombuffer(chunk.values, dtype="<u4").reshape(-1, self.PATHS)
            want = reference[chunk.column_begin:chunk.column_end].view("<u4")
            if got.shape != want.shape or not np.array_equal(got, want):
                mismatched.append((chunk.column_begin, chunk.column_end))
            delivered[chunk.column_begin:chunk.column_end] += 1

        reader = CallReader(stub.Price(request, timeout=120), on_chunk=check)
        reader.wait_accepted(self)
        time.sleep(0.5)
        server.signal(signal.SIGTERM)
        signalled = time.time()

        self.assertEqual(next(watch), NOT_SERVING)
        watch.cancel()
        for service in ("", "pricer.v1.Pricer"):
            self.assertEqual(health_check(channel, service), (OK, NOT_SERVING), service)
        refused = price(stub, small_request(), timeout=10)
        self.assertCall(refused, grpc.StatusCode.UNAVAILABLE, r"(?i)draining")
        code, details, _ = call_status(
            stub.UploadScenarios,
            iter([pricer_pb2.ScenarioChunk(rows=1, columns=1, values=b"\0\0\0\0")]), timeout=10)
        self.assertEqual(code, grpc.StatusCode.UNAVAILABLE, details)
        self.assertRegex(details, r"(?i)draining")
        self.assertIsNone(reader.ended_at, "the call ended before the checks of the drain")

        reader.finish(60)
        self.assertCall(reader, OK)
        self.assertEqual(mismatched, [])
        self.assertEqual(np.unique(delivered).tolist(), [1], "every column exactly once")
        self.assertEqual(reader.replies[-1].WhichOneof("kind"), "finished")
        self.assertEqual(server.proc.wait(timeout=30), 0, server.output()[-4000:])
        self.assertLess(time.time() - signalled, 30)

    def test_drain_seconds_cut_a_long_call(self):
        server = self.start_server("--drain-seconds", "1")
        reader = CallReader(self.stub(server).Price(long_request(), timeout=120),
                            on_chunk=lambda chunk: None)
        reader.wait_accepted(self)
        time.sleep(0.5)
        server.signal(signal.SIGINT)
        signalled = time.time()
        code = server.proc.wait(timeout=15)
        exited = time.time() - signalled
        self.assertEqual(code, 0, server.output()[-4000:])
        self.assertLess(exited, 1 + 3)
        reader.finish(10)
        self.assertCall(reader, grpc.StatusCode.UNAVAILABLE)
        # The job ran on through the drain, and was cut only at its end.
        self.assertGreater(sum(t > signalled + 0.3 for t in reader.chunk_times), 0)
        self.assertGreater(reader.ended_at - signalled, 0.9)

    def test_second_signal_exits_at_once(self):
        server = self.start_server()
        reader = CallReader(self.stub(server).Price(long_request(), timeout=120),
                            on_chunk=lambda chunk: None)
        reader.wait_accepted(self)
        server.signal(signal.SIGTERM)
        time.sleep(0.5)
        self.assertIsNone(server.proc.poll(), "pricerd should still be draining")
        server.signal(signal.SIGTERM)
        signalled = time.time()
        code = server.proc.wait(timeout=10)
        self.assertLess(time.time() - signalled, 3)
        self.assertNotEqual(code, 0)
        self.assertNotIn(code, CRASH_CODES, server.output()[-4000:])
        reader.finish(30)
        self.assertNotEqual(reader.code, OK)


    def test_sighup_reloads_nothing_and_keeps_serving(self):
        server = self.start_server()
        server.signal(signal.SIGHUP)
        deadline = time.time() + 10
        while "SIGHUP: nothing is reloaded" not in server.output():
            self.assertLess(time.time(), deadline, server.output()[-2000:])
            time.sleep(0.05)
        self.assertIsNone(server.proc.poll())
        self.assertEqual(health_check(self.channel(server.target), "pricer.v1.Pricer"),
                         (OK, SERVING))
        self.assertCall(price(self.stub(server), small_request()), OK)


class LogTest(OperationsTestCase):
    ISSUERS, PATHS, COLUMNS = 4, 1000, 300

    def start_logging_server(self, *flags):
        tokens_file, tokens = write_tokens(self.directory())
        return self.start_server("--auth-tokens-file", tokens_file, *flags), bearer(tokens["alice"])

    def workload(self, server, metadata):
        """A Price call of alice's that ends OK and one she cancels."""
        stub = self.stub(server)
        done = price(stub, price_request(self.ISSUERS, self.PATHS, self.COLUMNS),
                     metadata=metadata)
        self.assertCall(done, OK)
        cancelled = CallReader(stub.Price(long_request(), metadata=metadata, timeout=120),
                               on_chunk=lambda c: None)
        cancelled.wait_accepted(self)
        cancelled.call.cancel()
        cancelled.finish(30)
        self.assertCall(cancelled, grpc.StatusCode.CANCELLED)
        return done, cancelled

    def wait_for_access(self, server, parse, job, timeout=15):
        """The access entry of job `job`, parsed, once pricerd wrote it."""
        deadline = time.time() + timeout
        while True:
            for line in server.output().splitlines():
                entry = parse(line)
                if entry is not None and entry.get("job") == job:
                    return entry
            if time.time() > deadline:
                self.fail("no access entry for job %s:\n%s" % (job, server.output()[-4000:]))
            time.sleep(0.1)

    def check_entries(self, done, cancelled, ok_entry, cancelled_entry):
        for key in ("method", "client", "job", "code", "columns", "flops", "seconds", "bytes"):
            self.assertIn(key, ok_entry)
        for key in ("method", "client", "code", "peer"):
            self.assertIn(key, cancelled_entry)
        self.assertEqual(ok_entry["method"], "Price")
        self.assertEqual(ok_entry["client"], "alice")
        self.assertEqual(ok_entry["code"], "OK")
        self.assertEqual(int(ok_entry["columns"]), self.COLUMNS)
        flops = done.finished()[0].flops
        self.assertAlmostEqual(float(ok_entry["flops"]), flops, delta=1e-6 * flops)
        self.assertEqual(flops, 2 * self.PATHS * self.ISSUERS * self.COLUMNS)
        seconds = float(ok_entry["seconds"])
        self.assertGreater(seconds, 0)
        self.assertLess(seconds, 60)
        # Either the payload bytes of `finished` or all that was streamed.
        self.assertIn(int(ok_entry["bytes"]), (done.finished()[0].bytes, done.streamed_bytes))
        self.assertEqual(cancelled_entry["method"], "Price")
        self.assertEqual(cancelled_entry["client"], "alice")
        self.assertEqual(cancelled_entry["code"], "CANCELLED")
        self.assertIn("127.0.0.1", cancelled_entry["peer"])

    def test_text_access_lines(self):
        server, alice = self.start_logging_server()
        done, cancelled = self.workload(server, alice)

        def parse(line):
            if "access" not in line or "method=" not in line:
                return None
            return {k: v.strip('"') for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', line)}

        ok_entry = self.wait_for_access(server, parse, done.accepted.job_id)
        cancelled_entry = self.wait_for_access(server, parse, cancelled.accepted.job_id)
        self.check_entries(done, cancelled, ok_entry, cancelled_entry)

    def test_json_lines(self):
        server, alice = self.start_logging_server("--log-format", "json")
        done, cancelled = self.workload(server, alice)

        def parse(line):
            try:
                entry = json.loads(line)
            except ValueError:
                return None  # the check of every line below reports it
            return entry if isinstance(entry, dict) and entry.get("logger") == "access" else None

        ok_entry = self.wait_for_access(server, parse, done.accepted.job_id)
        cancelled_entry = self.wait_for_access(server, parse, cancelled.accepted.job_id)
        self.check_entries(done, cancelled, ok_entry, cancelled_entry)
        # Every line, through start, calls, drain and exit, is one JSON object.
        server.stop()
        lines = [line for line in server.output().splitlines() if line.strip()]
        self.assertGreater(len(lines), 3)
        for line in lines:
            entry = json.loads(line)
            self.assertIsInstance(entry, dict, line)
            for key in ("time", "level", "message"):
                self.assertIn(key, entry, line)


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
