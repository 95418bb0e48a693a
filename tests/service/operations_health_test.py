"""Health (grpc.health.v1 Check and Watch, and `pricer health`) and server
reflection: a generic client that knows no .proto of ours calls
ListDevices from what reflection sends."""

import re
import signal
import subprocess
import time

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool

from pricer_client._proto import pricer_pb2

import pricerd_process
from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process
from pricer_calls import OK, CallReader, long_request
from pricerd_process import OperationsTestCase
from standard_services import (SERVING, health_check, health_watch, in_pool, listed_services,
                               message_class, reflection_exchange, reflection_pb2)


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
        help_text = subprocess.run([pricerd_process.ARGS.pricer, "health", "--help"],
                                   capture_output=True, text=True, timeout=scaled(30))
        if help_text.returncode != 0 or not re.search(r"Usage: \S+ health", help_text.stdout):
            self.skipTest("`pricer health` is not in this pricer build:\n" + help_text.stdout[:300])

        def health(target):
            return subprocess.run([pricerd_process.ARGS.pricer, "health", "--target", target],
                                  capture_output=True, text=True, timeout=scaled(60))

        server = self.start_server()
        proc = health(server.target)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        # Draining: NOT_SERVING, non-zero.
        reader = CallReader(self.stub(server).Price(long_request(), timeout=scaled(60)))
        reader.wait_accepted(self)
        server.signal(signal.SIGTERM)
        time.sleep(0.3)
        proc = health(server.target)
        self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIsNone(server.proc.poll(), "pricerd should still be draining")
        server.signal(signal.SIGTERM)
        server.proc.wait(timeout=scaled(10))
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
                     if all(in_pool(pool, d) for d in f.dependency)]
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


if __name__ == "__main__":
    pricerd_process.main()
