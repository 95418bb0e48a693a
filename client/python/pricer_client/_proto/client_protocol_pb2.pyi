from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ChannelSettings(_message.Message):
    __slots__ = ["default_target", "keepalive_time_ms", "keepalive_timeout_ms", "load_balancing_policy", "max_pings_without_data"]
    DEFAULT_TARGET_FIELD_NUMBER: _ClassVar[int]
    KEEPALIVE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    KEEPALIVE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCING_POLICY_FIELD_NUMBER: _ClassVar[int]
    MAX_PINGS_WITHOUT_DATA_FIELD_NUMBER: _ClassVar[int]
    default_target: str
    keepalive_time_ms: int
    keepalive_timeout_ms: int
    load_balancing_policy: str
    max_pings_without_data: int
    def __init__(self, default_target: _Optional[str] = ..., load_balancing_policy: _Optional[str] = ..., keepalive_time_ms: _Optional[int] = ..., keepalive_timeout_ms: _Optional[int] = ..., max_pings_without_data: _Optional[int] = ...) -> None: ...

class RetryPolicy(_message.Message):
    __slots__ = ["backoff_multiplier", "first_backoff_ms", "max_retries_without_progress", "retryable_codes"]
    BACKOFF_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    FIRST_BACKOFF_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_RETRIES_WITHOUT_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_CODES_FIELD_NUMBER: _ClassVar[int]
    backoff_multiplier: int
    first_backoff_ms: int
    max_retries_without_progress: int
    retryable_codes: str
    def __init__(self, retryable_codes: _Optional[str] = ..., max_retries_without_progress: _Optional[int] = ..., first_backoff_ms: _Optional[int] = ..., backoff_multiplier: _Optional[int] = ...) -> None: ...

class SeedPreset(_message.Message):
    __slots__ = ["issuers", "maturity", "paths", "rate", "scenario_value_max", "scenario_value_min", "scenarios", "seed", "spot_max", "spot_min", "volatility_max", "volatility_min"]
    ISSUERS_FIELD_NUMBER: _ClassVar[int]
    MATURITY_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    SCENARIOS_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_VALUE_MAX_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_VALUE_MIN_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SPOT_MAX_FIELD_NUMBER: _ClassVar[int]
    SPOT_MIN_FIELD_NUMBER: _ClassVar[int]
    VOLATILITY_MAX_FIELD_NUMBER: _ClassVar[int]
    VOLATILITY_MIN_FIELD_NUMBER: _ClassVar[int]
    issuers: int
    maturity: float
    paths: int
    rate: float
    scenario_value_max: float
    scenario_value_min: float
    scenarios: int
    seed: int
    spot_max: float
    spot_min: float
    volatility_max: float
    volatility_min: float
    def __init__(self, issuers: _Optional[int] = ..., spot_min: _Optional[float] = ..., spot_max: _Optional[float] = ..., volatility_min: _Optional[float] = ..., volatility_max: _Optional[float] = ..., paths: _Optional[int] = ..., scenarios: _Optional[int] = ..., scenario_value_min: _Optional[float] = ..., scenario_value_max: _Optional[float] = ..., seed: _Optional[int] = ..., rate: _Optional[float] = ..., maturity: _Optional[float] = ...) -> None: ...

class SharedRingLayout(_message.Message):
    __slots__ = ["client_slots", "header_bytes", "magic", "max_slot_bytes", "max_slots", "min_slot_bytes", "released_offset", "slot_alignment", "token_bytes", "token_offset"]
    CLIENT_SLOTS_FIELD_NUMBER: _ClassVar[int]
    HEADER_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAGIC_FIELD_NUMBER: _ClassVar[int]
    MAX_SLOTS_FIELD_NUMBER: _ClassVar[int]
    MAX_SLOT_BYTES_FIELD_NUMBER: _ClassVar[int]
    MIN_SLOT_BYTES_FIELD_NUMBER: _ClassVar[int]
    RELEASED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    SLOT_ALIGNMENT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_OFFSET_FIELD_NUMBER: _ClassVar[int]
    client_slots: int
    header_bytes: int
    magic: bytes
    max_slot_bytes: int
    max_slots: int
    min_slot_bytes: int
    released_offset: int
    slot_alignment: int
    token_bytes: int
    token_offset: int
    def __init__(self, magic: _Optional[bytes] = ..., token_offset: _Optional[int] = ..., token_bytes: _Optional[int] = ..., released_offset: _Optional[int] = ..., header_bytes: _Optional[int] = ..., slot_alignment: _Optional[int] = ..., min_slot_bytes: _Optional[int] = ..., max_slot_bytes: _Optional[int] = ..., max_slots: _Optional[int] = ..., client_slots: _Optional[int] = ...) -> None: ...

class SplitWarmUp(_message.Message):
    __slots__ = ["connect_timeout_ms", "max_wait_ms", "poll_interval_ms", "quiet_calls_per_server", "quiet_ms"]
    CONNECT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    POLL_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    QUIET_CALLS_PER_SERVER_FIELD_NUMBER: _ClassVar[int]
    QUIET_MS_FIELD_NUMBER: _ClassVar[int]
    connect_timeout_ms: int
    max_wait_ms: int
    poll_interval_ms: int
    quiet_calls_per_server: int
    quiet_ms: int
    def __init__(self, connect_timeout_ms: _Optional[int] = ..., quiet_calls_per_server: _Optional[int] = ..., quiet_ms: _Optional[int] = ..., poll_interval_ms: _Optional[int] = ..., max_wait_ms: _Optional[int] = ...) -> None: ...
