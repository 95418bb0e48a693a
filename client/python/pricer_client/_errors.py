"""How a price() call fails."""

import grpc


class PricerError(Exception):
    """A call the server refused or that failed: the gRPC code and message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


def contradiction(what):
    """A reply that contradicts the request or the replies before it."""
    return PricerError(grpc.StatusCode.INTERNAL, "the server sent " + what)
