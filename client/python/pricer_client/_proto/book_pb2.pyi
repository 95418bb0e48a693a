from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Instrument(_message.Message):
    __slots__ = ["expiry", "issuer", "strike", "type", "volatility"]
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    EXPIRY_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    STRIKE_FIELD_NUMBER: _ClassVar[int]
    TYPE_CALL: Instrument.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FORWARD: Instrument.Type
    TYPE_PUT: Instrument.Type
    TYPE_STOCK: Instrument.Type
    VOLATILITY_FIELD_NUMBER: _ClassVar[int]
    expiry: float
    issuer: int
    strike: float
    type: Instrument.Type
    volatility: float
    def __init__(self, issuer: _Optional[int] = ..., type: _Optional[_Union[Instrument.Type, str]] = ..., strike: _Optional[float] = ..., expiry: _Optional[float] = ..., volatility: _Optional[float] = ...) -> None: ...

class InstrumentValuesChunk(_message.Message):
    __slots__ = ["instrument_begin", "instrument_end", "rows", "values"]
    INSTRUMENT_BEGIN_FIELD_NUMBER: _ClassVar[int]
    INSTRUMENT_END_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    instrument_begin: int
    instrument_end: int
    rows: int
    values: bytes
    def __init__(self, instrument_begin: _Optional[int] = ..., instrument_end: _Optional[int] = ..., rows: _Optional[int] = ..., values: _Optional[bytes] = ...) -> None: ...
