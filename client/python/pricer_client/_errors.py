"""How a call fails."""

from typing import Optional

import grpc

# The trailing metadata in which pricerd names the request field that an
# INVALID_ARGUMENT is about (pricer.proto, service Pricer).
FIELD_METADATA_KEY = "pricer-field"


class PricerError(Exception):
    """A call the server refused or that failed.

    code: the grpc.StatusCode; message: the server's message; field: the
    request field the server named (e.g. "market.explicit.volatility[1]"),
    or None.
    """

    def __init__(self, code: grpc.StatusCode, message: str, field: Optional[str] = None):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.field = field


def field_of(trailing_metadata) -> Optional[str]:
    for key, value in trailing_metadata or ():
        if key == FIELD_METADATA_KEY:
            return value
    return None


def contradiction(what):
    """A reply that contradicts the request or the replies before it."""
    return PricerError(grpc.StatusCode.INTERNAL, "the server sent " + what)


def from_rpc_error(error: grpc.RpcError) -> PricerError:
    """The PricerError of a failed call (sync or asyncio)."""
    return PricerError(error.code(), error.details(), field_of(error.trailing_metadata()))
