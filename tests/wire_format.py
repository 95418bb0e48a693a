"""Protobuf's base-128 varints, for the tests that read or write wire format
by hand: grpc.health.v1's messages (service/standard_services.py), the
progress journal's record lengths (client/pricerd_fixture.py) and the fuzz
targets' seed corpora (fuzz/make_corpus.py)."""


def varint(value):
    """The bytes of `value` (>= 0) as a varint."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def read_varint(data, at):
    """(value, the index past it) of the varint at data[at]; IndexError when
    `data` ends inside it."""
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at
