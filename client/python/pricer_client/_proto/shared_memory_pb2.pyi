from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class SharedMemoryRing(_message.Message):
    __slots__ = ["fd", "phase", "pid", "slot_bytes", "slots", "token"]
    FD_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    SLOT_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    fd: int
    phase: int
    pid: int
    slot_bytes: int
    slots: int
    token: bytes
    def __init__(self, pid: _Optional[int] = ..., fd: _Optional[int] = ..., slots: _Optional[int] = ..., slot_bytes: _Optional[int] = ..., token: _Optional[bytes] = ..., phase: _Optional[int] = ...) -> None: ...
