from pricer_client._proto import devices_pb2 as _devices_pb2
from pricer_client._proto import statistics_pb2 as _statistics_pb2
from pricer_client._proto import book_pb2 as _book_pb2
from pricer_client._proto import shared_memory_pb2 as _shared_memory_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

from pricer_client._proto.devices_pb2 import ListDevicesRequest
from pricer_client._proto.devices_pb2 import DeviceInfo
from pricer_client._proto.devices_pb2 import ListDevicesReply
from pricer_client._proto.statistics_pb2 import StatisticsSelection
from pricer_client._proto.statistics_pb2 import Contributions
from pricer_client._proto.statistics_pb2 import LevelValues
from pricer_client._proto.statistics_pb2 import ColumnStatistics
from pricer_client._proto.statistics_pb2 import PrecisionTarget
from pricer_client._proto.statistics_pb2 import RoundStarted
from pricer_client._proto.book_pb2 import Instrument
from pricer_client._proto.book_pb2 import InstrumentValuesChunk
from pricer_client._proto.shared_memory_pb2 import SharedMemoryRing
DESCRIPTOR: _descriptor.FileDescriptor
PRECISION_BF16: Precision
PRECISION_FP32: Precision
PRECISION_TF32: Precision

class DevicePlan(_message.Message):
    __slots__ = ["device", "resident_bytes", "shard_bytes", "shards_in_flight"]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    RESIDENT_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHARDS_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    SHARD_BYTES_FIELD_NUMBER: _ClassVar[int]
    device: str
    resident_bytes: int
    shard_bytes: int
    shards_in_flight: int
    def __init__(self, device: _Optional[str] = ..., shards_in_flight: _Optional[int] = ..., resident_bytes: _Optional[int] = ..., shard_bytes: _Optional[int] = ...) -> None: ...

class ExplicitMarket(_message.Message):
    __slots__ = ["spot", "volatility"]
    SPOT_FIELD_NUMBER: _ClassVar[int]
    VOLATILITY_FIELD_NUMBER: _ClassVar[int]
    spot: _containers.RepeatedScalarFieldContainer[float]
    volatility: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, spot: _Optional[_Iterable[float]] = ..., volatility: _Optional[_Iterable[float]] = ...) -> None: ...

class GeneratedMarket(_message.Message):
    __slots__ = ["issuers", "seed", "spot_max", "spot_min", "volatility_max", "volatility_min"]
    ISSUERS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SPOT_MAX_FIELD_NUMBER: _ClassVar[int]
    SPOT_MIN_FIELD_NUMBER: _ClassVar[int]
    VOLATILITY_MAX_FIELD_NUMBER: _ClassVar[int]
    VOLATILITY_MIN_FIELD_NUMBER: _ClassVar[int]
    issuers: int
    seed: int
    spot_max: float
    spot_min: float
    volatility_max: float
    volatility_min: float
    def __init__(self, issuers: _Optional[int] = ..., seed: _Optional[int] = ..., spot_min: _Optional[float] = ..., spot_max: _Optional[float] = ..., volatility_min: _Optional[float] = ..., volatility_max: _Optional[float] = ...) -> None: ...

class GeneratedScenarios(_message.Message):
    __slots__ = ["columns", "seed", "value_max", "value_min"]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    VALUE_MAX_FIELD_NUMBER: _ClassVar[int]
    VALUE_MIN_FIELD_NUMBER: _ClassVar[int]
    columns: int
    seed: int
    value_max: float
    value_min: float
    def __init__(self, columns: _Optional[int] = ..., seed: _Optional[int] = ..., value_min: _Optional[float] = ..., value_max: _Optional[float] = ...) -> None: ...

class HistoricalReturns(_message.Message):
    __slots__ = ["matrix", "scenario_set"]
    MATRIX_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_SET_FIELD_NUMBER: _ClassVar[int]
    matrix: Matrix
    scenario_set: str
    def __init__(self, matrix: _Optional[_Union[Matrix, _Mapping]] = ..., scenario_set: _Optional[str] = ...) -> None: ...

class JobAccepted(_message.Message):
    __slots__ = ["column_begin", "column_end", "instruments", "issuers", "job_id", "paths", "plan"]
    COLUMN_BEGIN_FIELD_NUMBER: _ClassVar[int]
    COLUMN_END_FIELD_NUMBER: _ClassVar[int]
    INSTRUMENTS_FIELD_NUMBER: _ClassVar[int]
    ISSUERS_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    column_begin: int
    column_end: int
    instruments: int
    issuers: int
    job_id: str
    paths: int
    plan: Plan
    def __init__(self, job_id: _Optional[str] = ..., plan: _Optional[_Union[Plan, _Mapping]] = ..., issuers: _Optional[int] = ..., paths: _Optional[int] = ..., column_begin: _Optional[int] = ..., column_end: _Optional[int] = ..., instruments: _Optional[int] = ...) -> None: ...

class JobFinished(_message.Message):
    __slots__ = ["bytes", "elapsed_seconds", "flops", "gemm_seconds", "statistics_seconds"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    GEMM_SECONDS_FIELD_NUMBER: _ClassVar[int]
    STATISTICS_SECONDS_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    elapsed_seconds: float
    flops: float
    gemm_seconds: float
    statistics_seconds: float
    def __init__(self, elapsed_seconds: _Optional[float] = ..., flops: _Optional[float] = ..., bytes: _Optional[int] = ..., gemm_seconds: _Optional[float] = ..., statistics_seconds: _Optional[float] = ...) -> None: ...

class Market(_message.Message):
    __slots__ = ["correlation", "explicit", "generated"]
    CORRELATION_FIELD_NUMBER: _ClassVar[int]
    EXPLICIT_FIELD_NUMBER: _ClassVar[int]
    GENERATED_FIELD_NUMBER: _ClassVar[int]
    correlation: _containers.RepeatedScalarFieldContainer[float]
    explicit: ExplicitMarket
    generated: GeneratedMarket
    def __init__(self, explicit: _Optional[_Union[ExplicitMarket, _Mapping]] = ..., generated: _Optional[_Union[GeneratedMarket, _Mapping]] = ..., correlation: _Optional[_Iterable[float]] = ...) -> None: ...

class Matrix(_message.Message):
    __slots__ = ["columns", "rows", "values"]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    columns: int
    rows: int
    values: bytes
    def __init__(self, rows: _Optional[int] = ..., columns: _Optional[int] = ..., values: _Optional[bytes] = ...) -> None: ...

class OutputOptions(_message.Message):
    __slots__ = ["chunk_columns", "full", "instrument_values", "shared_memory", "statistics", "terminal_prices"]
    CHUNK_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    INSTRUMENT_VALUES_FIELD_NUMBER: _ClassVar[int]
    SHARED_MEMORY_FIELD_NUMBER: _ClassVar[int]
    STATISTICS_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_PRICES_FIELD_NUMBER: _ClassVar[int]
    chunk_columns: int
    full: bool
    instrument_values: bool
    shared_memory: _shared_memory_pb2.SharedMemoryRing
    statistics: _statistics_pb2.StatisticsSelection
    terminal_prices: bool
    def __init__(self, full: bool = ..., statistics: _Optional[_Union[_statistics_pb2.StatisticsSelection, _Mapping]] = ..., terminal_prices: bool = ..., instrument_values: bool = ..., chunk_columns: _Optional[int] = ..., shared_memory: _Optional[_Union[_shared_memory_pb2.SharedMemoryRing, _Mapping]] = ...) -> None: ...

class Plan(_message.Message):
    __slots__ = ["chunk_columns", "device_plans", "devices", "shard_columns", "shard_count"]
    CHUNK_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    DEVICE_PLANS_FIELD_NUMBER: _ClassVar[int]
    SHARD_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    SHARD_COUNT_FIELD_NUMBER: _ClassVar[int]
    chunk_columns: int
    device_plans: _containers.RepeatedCompositeFieldContainer[DevicePlan]
    devices: _containers.RepeatedScalarFieldContainer[str]
    shard_columns: int
    shard_count: int
    def __init__(self, shard_columns: _Optional[int] = ..., shard_count: _Optional[int] = ..., chunk_columns: _Optional[int] = ..., devices: _Optional[_Iterable[str]] = ..., device_plans: _Optional[_Iterable[_Union[DevicePlan, _Mapping]]] = ...) -> None: ...

class PriceReply(_message.Message):
    __slots__ = ["accepted", "chunk", "finished", "prices", "round", "values"]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    PRICES_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    accepted: JobAccepted
    chunk: ResultChunk
    finished: JobFinished
    prices: TerminalPricesChunk
    round: _statistics_pb2.RoundStarted
    values: _book_pb2.InstrumentValuesChunk
    def __init__(self, accepted: _Optional[_Union[JobAccepted, _Mapping]] = ..., chunk: _Optional[_Union[ResultChunk, _Mapping]] = ..., prices: _Optional[_Union[TerminalPricesChunk, _Mapping]] = ..., finished: _Optional[_Union[JobFinished, _Mapping]] = ..., round: _Optional[_Union[_statistics_pb2.RoundStarted, _Mapping]] = ..., values: _Optional[_Union[_book_pb2.InstrumentValuesChunk, _Mapping]] = ...) -> None: ...

class PriceRequest(_message.Message):
    __slots__ = ["antithetic", "column_begin", "column_end", "instruments", "market", "maturity", "output", "paths", "precision", "priority", "rate", "returns", "scenarios", "seed", "target"]
    ANTITHETIC_FIELD_NUMBER: _ClassVar[int]
    COLUMN_BEGIN_FIELD_NUMBER: _ClassVar[int]
    COLUMN_END_FIELD_NUMBER: _ClassVar[int]
    INSTRUMENTS_FIELD_NUMBER: _ClassVar[int]
    MARKET_FIELD_NUMBER: _ClassVar[int]
    MATURITY_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    RETURNS_FIELD_NUMBER: _ClassVar[int]
    SCENARIOS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    antithetic: bool
    column_begin: int
    column_end: int
    instruments: _containers.RepeatedCompositeFieldContainer[_book_pb2.Instrument]
    market: Market
    maturity: float
    output: OutputOptions
    paths: int
    precision: Precision
    priority: int
    rate: float
    returns: HistoricalReturns
    scenarios: Scenarios
    seed: int
    target: _statistics_pb2.PrecisionTarget
    def __init__(self, market: _Optional[_Union[Market, _Mapping]] = ..., rate: _Optional[float] = ..., maturity: _Optional[float] = ..., paths: _Optional[int] = ..., seed: _Optional[int] = ..., scenarios: _Optional[_Union[Scenarios, _Mapping]] = ..., column_begin: _Optional[int] = ..., column_end: _Optional[int] = ..., output: _Optional[_Union[OutputOptions, _Mapping]] = ..., priority: _Optional[int] = ..., antithetic: bool = ..., precision: _Optional[_Union[Precision, str]] = ..., target: _Optional[_Union[_statistics_pb2.PrecisionTarget, _Mapping]] = ..., instruments: _Optional[_Iterable[_Union[_book_pb2.Instrument, _Mapping]]] = ..., returns: _Optional[_Union[HistoricalReturns, _Mapping]] = ...) -> None: ...

class ResultChunk(_message.Message):
    __slots__ = ["column_begin", "column_end", "contributions", "rows", "shared_slot", "statistics", "values"]
    COLUMN_BEGIN_FIELD_NUMBER: _ClassVar[int]
    COLUMN_END_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTIONS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    SHARED_SLOT_FIELD_NUMBER: _ClassVar[int]
    STATISTICS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    column_begin: int
    column_end: int
    contributions: _containers.RepeatedCompositeFieldContainer[_statistics_pb2.Contributions]
    rows: int
    shared_slot: int
    statistics: _statistics_pb2.ColumnStatistics
    values: bytes
    def __init__(self, column_begin: _Optional[int] = ..., column_end: _Optional[int] = ..., rows: _Optional[int] = ..., values: _Optional[bytes] = ..., statistics: _Optional[_Union[_statistics_pb2.ColumnStatistics, _Mapping]] = ..., contributions: _Optional[_Iterable[_Union[_statistics_pb2.Contributions, _Mapping]]] = ..., shared_slot: _Optional[int] = ...) -> None: ...

class ScenarioChunk(_message.Message):
    __slots__ = ["columns", "rows", "values"]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    columns: int
    rows: int
    values: bytes
    def __init__(self, rows: _Optional[int] = ..., columns: _Optional[int] = ..., values: _Optional[bytes] = ...) -> None: ...

class ScenarioSet(_message.Message):
    __slots__ = ["bytes", "columns", "existed", "id", "rows"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    EXISTED_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    columns: int
    existed: bool
    id: str
    rows: int
    def __init__(self, id: _Optional[str] = ..., rows: _Optional[int] = ..., columns: _Optional[int] = ..., bytes: _Optional[int] = ..., existed: bool = ...) -> None: ...

class Scenarios(_message.Message):
    __slots__ = ["generated", "matrix", "scenario_set"]
    GENERATED_FIELD_NUMBER: _ClassVar[int]
    MATRIX_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_SET_FIELD_NUMBER: _ClassVar[int]
    generated: GeneratedScenarios
    matrix: Matrix
    scenario_set: str
    def __init__(self, matrix: _Optional[_Union[Matrix, _Mapping]] = ..., generated: _Optional[_Union[GeneratedScenarios, _Mapping]] = ..., scenario_set: _Optional[str] = ...) -> None: ...

class TerminalPricesChunk(_message.Message):
    __slots__ = ["issuer_begin", "issuer_end", "rows", "values"]
    ISSUER_BEGIN_FIELD_NUMBER: _ClassVar[int]
    ISSUER_END_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    issuer_begin: int
    issuer_end: int
    rows: int
    values: bytes
    def __init__(self, issuer_begin: _Optional[int] = ..., issuer_end: _Optional[int] = ..., rows: _Optional[int] = ..., values: _Optional[bytes] = ...) -> None: ...

class Precision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
