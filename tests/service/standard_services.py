"""The standard gRPC services of pricerd spoken by hand, for the operations
tests (operations_*_test.py): grpc.health.v1 from its two messages encoded
here, and server reflection (grpc.reflection.v1alpha) from our own minimal
server_reflection.proto; nothing of pricerd's own .proto is used to call
them."""

import os
import subprocess
import sys
import tempfile

from google.protobuf import message_factory

from pricer_calls import call_status
from binaries import scaled  # tests/binaries.py, on sys.path through pricer_calls
from wire_format import read_varint, varint  # tests/wire_format.py, the same

HERE = os.path.dirname(os.path.abspath(__file__))
SERVING, NOT_SERVING = 1, 2  # grpc.health.v1.HealthCheckResponse.ServingStatus


# ---- grpc.health.v1 by hand: HealthCheckRequest{string service = 1},
# HealthCheckResponse{enum status = 1} ----

def encode_health_request(service):
    data = service.encode()
    return b"\x0a" + varint(len(data)) + data if data else b""


def decode_health_status(data):
    """Field 1 (varint) of a HealthCheckResponse; 0 (UNKNOWN) when absent."""
    status, at = 0, 0
    while at < len(data):
        key, at = read_varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = read_varint(data, at)
            if field == 1:
                status = value
        elif wire == 2:
            length, at = read_varint(data, at)
            at += length
        elif wire == 5:
            at += 4
        elif wire == 1:
            at += 8
        else:
            raise ValueError("wire type %d in a HealthCheckResponse" % wire)
    return status


def health_check(channel, service="", timeout=10):
    """(code, status) of Health/Check."""
    check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                request_serializer=encode_health_request,
                                response_deserializer=decode_health_status)
    code, _, status = call_status(check, service, timeout=timeout)
    return code, status


def health_watch(channel, service="", timeout=20):
    """The Health/Watch stream, open for `timeout` seconds (scaled): it spans
    a phase of the test, not one answer."""
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch",
                                 request_serializer=encode_health_request,
                                 response_deserializer=decode_health_status)
    return watch(service, timeout=scaled(timeout))


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


def in_pool(pool, name):
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
