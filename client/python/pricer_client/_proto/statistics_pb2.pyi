from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ColumnStatistics(_message.Message):
    __slots__ = ["es", "max", "mean", "mean_standard_error", "min", "quantiles", "stddev", "stddev_standard_error", "target_met", "v0", "var"]
    ES_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    MEAN_STANDARD_ERROR_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    QUANTILES_FIELD_NUMBER: _ClassVar[int]
    STDDEV_FIELD_NUMBER: _ClassVar[int]
    STDDEV_STANDARD_ERROR_FIELD_NUMBER: _ClassVar[int]
    TARGET_MET_FIELD_NUMBER: _ClassVar[int]
    V0_FIELD_NUMBER: _ClassVar[int]
    VAR_FIELD_NUMBER: _ClassVar[int]
    es: _containers.RepeatedCompositeFieldContainer[LevelValues]
    max: _containers.RepeatedScalarFieldContainer[float]
    mean: _containers.RepeatedScalarFieldContainer[float]
    mean_standard_error: _containers.RepeatedScalarFieldContainer[float]
    min: _containers.RepeatedScalarFieldContainer[float]
    quantiles: _containers.RepeatedCompositeFieldContainer[LevelValues]
    stddev: _containers.RepeatedScalarFieldContainer[float]
    stddev_standard_error: _containers.RepeatedScalarFieldContainer[float]
    target_met: _containers.RepeatedScalarFieldContainer[bool]
    v0: _containers.RepeatedScalarFieldContainer[float]
    var: _containers.RepeatedCompositeFieldContainer[LevelValues]
    def __init__(self, mean: _Optional[_Iterable[float]] = ..., stddev: _Optional[_Iterable[float]] = ..., min: _Optional[_Iterable[float]] = ..., max: _Optional[_Iterable[float]] = ..., v0: _Optional[_Iterable[float]] = ..., quantiles: _Optional[_Iterable[_Union[LevelValues, _Mapping]]] = ..., var: _Optional[_Iterable[_Union[LevelValues, _Mapping]]] = ..., es: _Optional[_Iterable[_Union[LevelValues, _Mapping]]] = ..., mean_standard_error: _Optional[_Iterable[float]] = ..., stddev_standard_error: _Optional[_Iterable[float]] = ..., target_met: _Optional[_Iterable[bool]] = ...) -> None: ...

class Contributions(_message.Message):
    __slots__ = ["band_paths", "delta", "delta_standard_errors", "issuers", "level", "measure", "rows", "standard_errors", "values", "vega", "vega_standard_errors"]
    class Measure(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    BAND_PATHS_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    DELTA_STANDARD_ERRORS_FIELD_NUMBER: _ClassVar[int]
    ISSUERS_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    MEASURE_ES: Contributions.Measure
    MEASURE_FIELD_NUMBER: _ClassVar[int]
    MEASURE_UNSPECIFIED: Contributions.Measure
    MEASURE_VAR: Contributions.Measure
    ROWS_FIELD_NUMBER: _ClassVar[int]
    STANDARD_ERRORS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    VEGA_FIELD_NUMBER: _ClassVar[int]
    VEGA_STANDARD_ERRORS_FIELD_NUMBER: _ClassVar[int]
    band_paths: int
    delta: bytes
    delta_standard_errors: bytes
    issuers: int
    level: float
    measure: Contributions.Measure
    rows: int
    standard_errors: bytes
    values: bytes
    vega: bytes
    vega_standard_errors: bytes
    def __init__(self, measure: _Optional[_Union[Contributions.Measure, str]] = ..., level: _Optional[float] = ..., rows: _Optional[int] = ..., band_paths: _Optional[int] = ..., values: _Optional[bytes] = ..., standard_errors: _Optional[bytes] = ..., issuers: _Optional[int] = ..., delta: _Optional[bytes] = ..., delta_standard_errors: _Optional[bytes] = ..., vega: _Optional[bytes] = ..., vega_standard_errors: _Optional[bytes] = ...) -> None: ...

class LevelValues(_message.Message):
    __slots__ = ["level", "lower", "standard_error", "upper", "values"]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    LOWER_FIELD_NUMBER: _ClassVar[int]
    STANDARD_ERROR_FIELD_NUMBER: _ClassVar[int]
    UPPER_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    level: float
    lower: _containers.RepeatedScalarFieldContainer[float]
    standard_error: _containers.RepeatedScalarFieldContainer[float]
    upper: _containers.RepeatedScalarFieldContainer[float]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, level: _Optional[float] = ..., values: _Optional[_Iterable[float]] = ..., lower: _Optional[_Iterable[float]] = ..., upper: _Optional[_Iterable[float]] = ..., standard_error: _Optional[_Iterable[float]] = ...) -> None: ...

class PrecisionTarget(_message.Message):
    __slots__ = ["absolute", "level", "max_paths", "relative", "statistic"]
    class Statistic(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    ABSOLUTE_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    MAX_PATHS_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_FIELD_NUMBER: _ClassVar[int]
    STATISTIC_ES: PrecisionTarget.Statistic
    STATISTIC_FIELD_NUMBER: _ClassVar[int]
    STATISTIC_MEAN: PrecisionTarget.Statistic
    STATISTIC_QUANTILE: PrecisionTarget.Statistic
    STATISTIC_STDDEV: PrecisionTarget.Statistic
    STATISTIC_UNSPECIFIED: PrecisionTarget.Statistic
    STATISTIC_VAR: PrecisionTarget.Statistic
    absolute: float
    level: float
    max_paths: int
    relative: float
    statistic: PrecisionTarget.Statistic
    def __init__(self, statistic: _Optional[_Union[PrecisionTarget.Statistic, str]] = ..., level: _Optional[float] = ..., relative: _Optional[float] = ..., absolute: _Optional[float] = ..., max_paths: _Optional[int] = ...) -> None: ...

class RoundStarted(_message.Message):
    __slots__ = ["column_begin", "column_end", "columns", "paths", "round"]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    COLUMN_BEGIN_FIELD_NUMBER: _ClassVar[int]
    COLUMN_END_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    column_begin: int
    column_end: int
    columns: int
    paths: int
    round: int
    def __init__(self, round: _Optional[int] = ..., paths: _Optional[int] = ..., columns: _Optional[int] = ..., column_begin: _Optional[int] = ..., column_end: _Optional[int] = ...) -> None: ...

class StatisticsSelection(_message.Message):
    __slots__ = ["delta", "error_confidence", "errors", "es", "es_contributions", "max", "mean", "min", "moments_from_covariance", "quantiles", "stddev", "var", "var_contributions", "vega"]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    ERROR_CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    ES_CONTRIBUTIONS_FIELD_NUMBER: _ClassVar[int]
    ES_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MOMENTS_FROM_COVARIANCE_FIELD_NUMBER: _ClassVar[int]
    QUANTILES_FIELD_NUMBER: _ClassVar[int]
    STDDEV_FIELD_NUMBER: _ClassVar[int]
    VAR_CONTRIBUTIONS_FIELD_NUMBER: _ClassVar[int]
    VAR_FIELD_NUMBER: _ClassVar[int]
    VEGA_FIELD_NUMBER: _ClassVar[int]
    delta: bool
    error_confidence: float
    errors: bool
    es: _containers.RepeatedScalarFieldContainer[float]
    es_contributions: _containers.RepeatedScalarFieldContainer[float]
    max: bool
    mean: bool
    min: bool
    moments_from_covariance: bool
    quantiles: _containers.RepeatedScalarFieldContainer[float]
    stddev: bool
    var: _containers.RepeatedScalarFieldContainer[float]
    var_contributions: _containers.RepeatedScalarFieldContainer[float]
    vega: bool
    def __init__(self, mean: bool = ..., stddev: bool = ..., min: bool = ..., max: bool = ..., quantiles: _Optional[_Iterable[float]] = ..., var: _Optional[_Iterable[float]] = ..., es: _Optional[_Iterable[float]] = ..., errors: bool = ..., error_confidence: _Optional[float] = ..., moments_from_covariance: bool = ..., es_contributions: _Optional[_Iterable[float]] = ..., var_contributions: _Optional[_Iterable[float]] = ..., delta: bool = ..., vega: bool = ...) -> None: ...
