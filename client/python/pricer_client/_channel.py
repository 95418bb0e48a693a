"""The channel of a Client: round robin over every address of the target,
keepalive pings, plain text or TLS, and the bearer token on every call."""

import collections
import os
from typing import Optional, Sequence, Tuple, Union

import grpc

from pricer_client._protocol import CHANNEL

# A PEM argument: the PEM bytes, or the path of a PEM file.
Pem = Union[str, os.PathLike, bytes]


def _pem(name: str, value: Optional[Pem]) -> Optional[bytes]:
    """The PEM bytes of `value`; an error names `name` (the parameter) and
    the path."""
    if value is None:
        return None
    pem, source = value, "the bytes given"
    if not isinstance(value, bytes):
        source = os.fspath(value)
        try:
            with open(source, "rb") as f:
                pem = f.read()
        except OSError as error:
            raise OSError(error.errno, f"{name}: cannot read {source}: {error.strerror}") from None
    if b"-----BEGIN " not in pem:
        raise ValueError(f"{name}: {source} is not PEM (no -----BEGIN line)")
    return pem


class _CallDetails(
        collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials",
                                                "wait_for_ready", "compression")),
        grpc.ClientCallDetails):
    pass


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                   grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds `authorization: Bearer <token>` to every call on a channel: the
    one place for devices(), upload() and every part and retry of price().
    Metadata rather than call credentials, which gRPC sends only over TLS:
    a token must work on a plain-text channel too."""

    def __init__(self, token: str):
        self._authorization = bearer_metadata(token)

    def _intercept(self, continuation, details, request):
        metadata = [*(details.metadata or ()), *self._authorization]
        return continuation(_CallDetails(details.method, details.timeout, metadata,
                                         details.credentials, details.wait_for_ready,
                                         details.compression), request)

    intercept_unary_unary = intercept_unary_stream = _intercept
    intercept_stream_unary = intercept_stream_stream = _intercept


def channel_options(options: Sequence[Tuple[str, Union[int, str]]] = ()):
    """The channel arguments of client_protocol.proto's ChannelSettings, then
    `options`. Calls go round robin over every address the target resolves
    to, so the parts of a split request spread over the servers; a ping every
    10 s during a call finds a server whose host or link went away (no RST
    arrives), so that its part is retried elsewhere."""
    return [("grpc.lb_policy_name", CHANNEL.load_balancing_policy),
            ("grpc.keepalive_time_ms", CHANNEL.keepalive_time_ms),
            ("grpc.keepalive_timeout_ms", CHANNEL.keepalive_timeout_ms),
            ("grpc.http2.max_pings_without_data", CHANNEL.max_pings_without_data), *options]


def bearer_metadata(token: Optional[str]):
    """The metadata a token adds to every call: none without one."""
    return (("authorization", "Bearer " + token),) if token else ()


def _credentials(tls_ca, tls_cert, tls_key, tls_server_name, options):
    """The channel credentials, or None for plain text: TLS is on when any
    tls_ argument is given."""
    if all(value is None for value in (tls_ca, tls_cert, tls_key, tls_server_name)):
        return None
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("tls_cert and tls_key go together: a client certificate "
                         "needs its private key")
    if tls_server_name is not None:
        options.append(("grpc.ssl_target_name_override", tls_server_name))
    return grpc.ssl_channel_credentials(root_certificates=_pem("tls_ca", tls_ca),
                                        private_key=_pem("tls_key", tls_key),
                                        certificate_chain=_pem("tls_cert", tls_cert))


def open_channel(target, token, tls_ca, tls_cert, tls_key, tls_server_name, options):
    """(the channel, the channel to call through: with the token when there
    is one)."""
    options = channel_options(options)
    credentials = _credentials(tls_ca, tls_cert, tls_key, tls_server_name, options)
    if credentials is not None:
        channel = grpc.secure_channel(target, credentials, options=options)
    else:
        channel = grpc.insecure_channel(target, options=options)
    calls = grpc.intercept_channel(channel, _BearerToken(token)) if token else channel
    return channel, calls


def open_aio_channel(target, tls_ca, tls_cert, tls_key, tls_server_name, options):
    """The grpc.aio channel of the same settings; its calls take the token
    as bearer_metadata()."""
    options = channel_options(options)
    credentials = _credentials(tls_ca, tls_cert, tls_key, tls_server_name, options)
    if credentials is not None:
        return grpc.aio.secure_channel(target, credentials, options=options)
    return grpc.aio.insecure_channel(target, options=options)
