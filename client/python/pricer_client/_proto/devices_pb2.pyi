from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeviceInfo(_message.Message):
    __slots__ = ["busy_seconds", "bytes_in_use", "headroom_bytes", "idle_block_bytes", "kernels", "kind", "lost", "memory_budget_bytes", "name", "peak_bytes", "shards_done"]
    BUSY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    BYTES_IN_USE_FIELD_NUMBER: _ClassVar[int]
    HEADROOM_BYTES_FIELD_NUMBER: _ClassVar[int]
    IDLE_BLOCK_BYTES_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BUDGET_BYTES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PEAK_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHARDS_DONE_FIELD_NUMBER: _ClassVar[int]
    busy_seconds: float
    bytes_in_use: int
    headroom_bytes: int
    idle_block_bytes: int
    kernels: str
    kind: str
    lost: str
    memory_budget_bytes: int
    name: str
    peak_bytes: int
    shards_done: int
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., memory_budget_bytes: _Optional[int] = ..., bytes_in_use: _Optional[int] = ..., peak_bytes: _Optional[int] = ..., shards_done: _Optional[int] = ..., busy_seconds: _Optional[float] = ..., lost: _Optional[str] = ..., headroom_bytes: _Optional[int] = ..., kernels: _Optional[str] = ..., idle_block_bytes: _Optional[int] = ...) -> None: ...

class ListDevicesReply(_message.Message):
    __slots__ = ["devices", "max_pending_bytes", "max_queued_jobs", "pending_bytes", "pinned_bytes_in_use", "pinned_memory_bytes", "pinned_peak_bytes", "queued_jobs", "server_id", "server_version"]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    MAX_PENDING_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_QUEUED_JOBS_FIELD_NUMBER: _ClassVar[int]
    PENDING_BYTES_FIELD_NUMBER: _ClassVar[int]
    PINNED_BYTES_IN_USE_FIELD_NUMBER: _ClassVar[int]
    PINNED_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    PINNED_PEAK_BYTES_FIELD_NUMBER: _ClassVar[int]
    QUEUED_JOBS_FIELD_NUMBER: _ClassVar[int]
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.RepeatedCompositeFieldContainer[DeviceInfo]
    max_pending_bytes: int
    max_queued_jobs: int
    pending_bytes: int
    pinned_bytes_in_use: int
    pinned_memory_bytes: int
    pinned_peak_bytes: int
    queued_jobs: int
    server_id: str
    server_version: str
    def __init__(self, devices: _Optional[_Iterable[_Union[DeviceInfo, _Mapping]]] = ..., queued_jobs: _Optional[int] = ..., max_queued_jobs: _Optional[int] = ..., pending_bytes: _Optional[int] = ..., max_pending_bytes: _Optional[int] = ..., server_version: _Optional[str] = ..., server_id: _Optional[str] = ..., pinned_memory_bytes: _Optional[int] = ..., pinned_bytes_in_use: _Optional[int] = ..., pinned_peak_bytes: _Optional[int] = ...) -> None: ...

class ListDevicesRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...
