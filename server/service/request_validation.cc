#include "server/service/request_validation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/service/attribution_validation.h"
#include "server/service/book_validation.h"
#include "server/service/field_checks.h"
#include "server/service/job_preparation.h"
#include "server/service/market_validation.h"

namespace pricer {
namespace {

static_assert(std::endian::native == std::endian::little,
              "matrices travel as little-endian float32; add a byte swap for this host");

// A stored set: its shape now; its values are read by the job's preparation.
absl::StatusOr<ScenarioMatrix> ToStoredScenarios(const std::string& id, int64_t issuers,
                                                 absl::string_view rows_are,
                                                 const ScenarioStore& store, Preparation* prep) {
  ASSIGN_OR_RETURN(const ScenarioStore::Shape set,
                   StoredSetShape(store, id, "scenarios.scenario_set"));
  if (set.rows != issuers) {
    return Invalid("scenarios.scenario_set rows", set.rows,
                   absl::StrCat("must equal ", rows_are, " ", issuers, " (set ", id, " is ",
                                set.rows, " x ", set.columns, ")"));
  }
  prep->scenario_set = id;
  return ScenarioMatrix::Deferred(set.rows, set.columns);
}

// A, whose rows are the issuers or the instruments (`rows_are` says which).
absl::StatusOr<ScenarioMatrix> ToScenarios(const v1::Scenarios& scenarios, int64_t issuers,
                                           absl::string_view rows_are, const ScenarioStore& store,
                                           Preparation* prep) {
  switch (scenarios.source_case()) {
    case v1::Scenarios::kScenarioSet:
      return ToStoredScenarios(scenarios.scenario_set(), issuers, rows_are, store, prep);
    case v1::Scenarios::kMatrix: {
      const v1::Matrix& m = scenarios.matrix();
      if (m.rows() != issuers) {
        return Invalid("scenarios.matrix.rows", m.rows(),
                       absl::StrCat("must equal ", rows_are, " ", issuers));
      }
      RETURN_IF_ERROR(CheckRange("scenarios.matrix.columns", m.columns(), 1, kMaxScenarioColumns));
      const int64_t expected = m.rows() * m.columns() * static_cast<int64_t>(sizeof(float));
      if (static_cast<int64_t>(m.values().size()) != expected) {
        return Invalid("scenarios.matrix.values size", m.values().size(),
                       absl::StrCat("must be 4 * rows * columns = ", expected, " bytes"));
      }
      auto values =
          std::make_shared<std::vector<float>>(static_cast<size_t>(m.rows() * m.columns()));
      std::memcpy(values->data(), m.values().data(), m.values().size());
      RETURN_IF_ERROR(CheckPositions("scenarios.matrix.values", *values, m.rows()));
      return ScenarioMatrix::Inline(m.rows(), m.columns(), std::move(values));
    }
    case v1::Scenarios::kGenerated: {
      const v1::GeneratedScenarios& g = scenarios.generated();
      RETURN_IF_ERROR(
          CheckRange("scenarios.generated.columns", g.columns(), 1, kMaxScenarioColumns));
      RETURN_IF_ERROR(CheckFinite("scenarios.generated.value_min", g.value_min()));
      RETURN_IF_ERROR(CheckFinite("scenarios.generated.value_max", g.value_max()));
      if (std::abs(g.value_min()) > kMaxPosition) {
        return Invalid("scenarios.generated.value_min", g.value_min(),
                       absl::StrCat("|value_min| must be <= ", kMaxPosition));
      }
      if (g.value_max() < g.value_min() || std::abs(g.value_max()) > kMaxPosition) {
        return Invalid(
            "scenarios.generated.value_max", g.value_max(),
            absl::StrCat("must be in [value_min ", g.value_min(), ", ", kMaxPosition, "]"));
      }
      return ScenarioMatrix::Generated(issuers, g.columns(), g.seed(),
                                       static_cast<float>(g.value_min()),
                                       static_cast<float>(g.value_max()));
    }
    case v1::Scenarios::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "scenarios is not set: give scenarios.matrix, scenarios.generated or "
      "scenarios.scenario_set");
}

absl::StatusOr<std::vector<double>> ToLevels(absl::string_view field,
                                             const google::protobuf::RepeatedField<double>& levels,
                                             bool open) {
  if (levels.size() > kMaxStatisticLevels) {
    return Invalid(absl::StrCat(field, " size"), levels.size(),
                   absl::StrCat("at most ", kMaxStatisticLevels, " levels"));
  }
  for (int l = 0; l < levels.size(); ++l) {
    const double level = levels[l];
    const bool inside = open ? (level > 0 && level < 1) : (level >= 0 && level <= 1);
    if (!inside) {
      return Invalid(absl::StrCat(field, "[", l, "]"), level,
                     open ? "must be in (0, 1)" : "must be in [0, 1]");
    }
  }
  return std::vector<double>(levels.begin(), levels.end());
}

absl::StatusOr<StatisticsSelection> ToStatistics(const v1::StatisticsSelection& request) {
  StatisticsSelection selection;
  selection.mean = request.mean();
  selection.stddev = request.stddev();
  selection.min = request.min();
  selection.max = request.max();
  for (auto [field, from, to, open] :
       {std::tuple{"output.statistics.quantiles", &request.quantiles(), &selection.quantiles,
                   false},
        std::tuple{"output.statistics.var", &request.var(), &selection.var, true},
        std::tuple{"output.statistics.es", &request.es(), &selection.es, true}}) {
    ASSIGN_OR_RETURN(*to, ToLevels(field, *from, open));
  }
  selection.from_covariance = request.moments_from_covariance();
  if (!selection.any()) {
    selection = StatisticsSelection::Basic();
    selection.min = selection.max = !request.moments_from_covariance();
    selection.from_covariance = request.moments_from_covariance();
  }
  selection.errors = request.errors();
  const double confidence = request.error_confidence();
  if (confidence != 0) {
    if (!(confidence > 0 && confidence < 1)) {
      return Invalid("output.statistics.error_confidence", confidence,
                     "must be in (0, 1), or 0 for 0.95");
    }
    selection.error_confidence = confidence;
  }
  return selection;
}

// The level of a quantile, var or es target: its index among `levels`.
absl::StatusOr<int64_t> TargetLevel(double level, const std::vector<double>& levels,
                                    absl::string_view selected) {
  for (size_t l = 0; l < levels.size(); ++l) {
    if (levels[l] == level) return static_cast<int64_t>(l);
  }
  return Invalid("target.level", level,
                 absl::StrCat("must be one of the levels of ", selected, " [",
                              absl::StrJoin(levels, ", "), "]"));
}

// The statistic of a target, which the request's statistics must include.
absl::Status ToTargetStatistic(const v1::PrecisionTarget& request,
                               const StatisticsSelection& selection, PrecisionTarget* target) {
  using S = PrecisionTarget::Statistic;
  const double level = request.level();
  switch (request.statistic()) {
    case v1::PrecisionTarget::STATISTIC_MEAN:
    case v1::PrecisionTarget::STATISTIC_STDDEV: {
      const bool mean = request.statistic() == v1::PrecisionTarget::STATISTIC_MEAN;
      target->statistic = mean ? S::kMean : S::kStddev;
      if (!(mean ? selection.mean : selection.stddev)) {
        return Invalid("target.statistic", StatisticName(target->statistic),
                       absl::StrCat("output.statistics.", StatisticName(target->statistic),
                                    " must be asked for"));
      }
      if (level != 0) return Invalid("target.level", level, "must be 0 for mean and stddev");
      return absl::OkStatus();
    }
    case v1::PrecisionTarget::STATISTIC_QUANTILE:
      target->statistic = S::kQuantile;
      break;
    case v1::PrecisionTarget::STATISTIC_VAR:
      target->statistic = S::kVar;
      break;
    case v1::PrecisionTarget::STATISTIC_ES:
      target->statistic = S::kEs;
      break;
    default:
      return Invalid("target.statistic", static_cast<int>(request.statistic()),
                     "must be STATISTIC_MEAN, _STDDEV, _QUANTILE, _VAR or _ES");
  }
  const std::vector<double>& levels = target->statistic == S::kQuantile ? selection.quantiles
                                      : target->statistic == S::kVar    ? selection.var
                                                                        : selection.es;
  target->level = level;
  ASSIGN_OR_RETURN(
      target->level_index,
      TargetLevel(level, levels,
                  absl::StrCat("output.statistics.", target->statistic == S::kQuantile
                                                         ? "quantiles"
                                                         : StatisticName(target->statistic))));
  return absl::OkStatus();
}

// The request's precision target (none without one); `spec` is checked
// otherwise. A target implies the statistics' errors.
absl::StatusOr<PrecisionTarget> ToTarget(const v1::PriceRequest& request, JobSpec* spec) {
  PrecisionTarget target;
  if (!request.has_target()) return target;
  const v1::PrecisionTarget& t = request.target();
  OutputSelection& output = spec->output;
  RETURN_IF_ERROR(ToTargetStatistic(t, output.statistics, &target));
  for (auto [field, value] :
       {std::pair{"target.relative", t.relative()}, std::pair{"target.absolute", t.absolute()}}) {
    if (!(std::isfinite(value) && value >= 0)) {
      return Invalid(field, value, "must be finite and >= 0");
    }
  }
  if (t.relative() == 0 && t.absolute() == 0) {
    return Invalid("target.relative", 0.0, "target.relative or target.absolute must be > 0");
  }
  target.relative = t.relative();
  target.absolute = t.absolute();
  if (t.max_paths() < spec->paths) {
    return Invalid("target.max_paths", t.max_paths(),
                   absl::StrCat("must be >= paths (", spec->paths, ")"));
  }
  RETURN_IF_ERROR(CheckRange("target.max_paths", t.max_paths(), 1, kMaxPaths));
  if (t.max_paths() * spec->market.issuers() > kMaxPathIssuerProduct) {
    return Invalid("target.max_paths", t.max_paths(),
                   absl::StrCat("max_paths * issuers must be <= ", kMaxPathIssuerProduct,
                                " (issuers ", spec->market.issuers(), ")"));
  }
  target.max_paths = t.max_paths();
  for (auto [field, set] : {std::pair{"output.full", output.full},
                            std::pair{"output.terminal_prices", output.terminal_prices},
                            std::pair{"output.instrument_values", output.instrument_values}}) {
    if (set) {
      return Invalid(field, "true",
                     "must be false with a target (its columns' path counts differ)");
    }
  }
  output.statistics.errors = true;
  return target;
}

// The moments shortcut's conditions (StatisticsSelection::from_covariance):
// the first field of `spec` that breaks one, named.
absl::Status CheckMomentsShortcut(const v1::PriceRequest& request, const JobSpec& spec) {
  const StatisticsSelection& s = spec.output.statistics;
  if (!s.from_covariance) return absl::OkStatus();
  constexpr const char* kWhy =
      "must be empty with moments_from_covariance (only mean and stddev "
      "come from ST's covariance)";
  if (s.min) return Invalid("output.statistics.min", "true", kWhy);
  if (s.max) return Invalid("output.statistics.max", "true", kWhy);
  for (auto [field, levels] :
       {std::pair{"output.statistics.quantiles", &s.quantiles},
        std::pair{"output.statistics.var", &s.var}, std::pair{"output.statistics.es", &s.es}}) {
    if (!levels->empty()) return Invalid(field, absl::StrJoin(*levels, ","), kWhy);
  }
  if (spec.target.max_paths > 0) {
    return Invalid("target.max_paths", spec.target.max_paths,
                   "a target needs errors, which moments_from_covariance does not give");
  }
  if (s.errors) {
    return Invalid("output.statistics.errors", "true",
                   "must be false with moments_from_covariance (the stddev's error needs SC)");
  }
  if (spec.output.full) {
    return Invalid("output.full", "true", "must be false with moments_from_covariance (no SC)");
  }
  if (spec.position_rows() > kMaxCovarianceIssuers) {
    const bool drawn = request.market().has_generated();
    const char* field = !spec.instruments.empty() ? "instruments size"
                        : drawn                   ? "market.generated.issuers"
                                                  : "market.explicit.spot size";
    return Invalid(field, spec.position_rows(),
                   absl::StrCat("must be <= ", kMaxCovarianceIssuers,
                                " with moments_from_covariance (the N x N or K x K covariance "
                                "of ST or V)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<GemmPrecision> ToPrecision(v1::Precision precision) {
  switch (precision) {
    case v1::PRECISION_FP32:
      return GemmPrecision::kFloat32;
    case v1::PRECISION_TF32:
      return GemmPrecision::kTensorFloat32;
    case v1::PRECISION_BF16:
      return GemmPrecision::kBFloat16;
    default:
      return Invalid("precision", static_cast<int>(precision),
                     "must be PRECISION_FP32 (0), PRECISION_TF32 (1) or PRECISION_BF16 (2)");
  }
}

// The priced range [column_begin, column_end) of `columns` (0, 0: all).
absl::Status ToColumns(const v1::PriceRequest& request, int64_t columns, JobSpec* spec) {
  spec->column_begin = request.column_begin();
  spec->column_end = request.column_end();
  if (spec->column_begin == 0 && spec->column_end == 0) spec->column_end = columns;
  if (spec->column_begin < 0 || spec->column_begin >= columns) {
    return Invalid(
        "column_begin", spec->column_begin,
        absl::StrCat("must be in [0, ", columns, ") for ", columns, " scenario columns"));
  }
  if (spec->column_end <= spec->column_begin || spec->column_end > columns) {
    return Invalid("column_end", spec->column_end,
                   absl::StrCat("must be in (column_begin ", spec->column_begin, ", ", columns,
                                "] for ", columns, " scenario columns"));
  }
  return absl::OkStatus();
}

absl::StatusOr<OutputSelection> ToOutput(const v1::OutputOptions& output) {
  RETURN_IF_ERROR(CheckRange("output.chunk_columns", output.chunk_columns(), 0, kMaxChunkColumns));
  OutputSelection selection;
  selection.full = output.full();
  selection.terminal_prices = output.terminal_prices();
  selection.instrument_values = output.instrument_values();
  if (output.has_statistics() ||
      (!output.full() && !output.terminal_prices() && !output.instrument_values())) {
    ASSIGN_OR_RETURN(selection.statistics, ToStatistics(output.statistics()));
  } else {
    selection.statistics = StatisticsSelection();
  }
  selection.chunk_columns = output.chunk_columns();
  return selection;
}

}  // namespace

absl::StatusOr<ScenarioStore::Shape> StoredSetShape(const ScenarioStore& store,
                                                    const std::string& id,
                                                    absl::string_view field) {
  absl::StatusOr<ScenarioStore::Shape> set = store.ShapeOf(id);
  if (absl::IsNotFound(set.status())) {
    return absl::NotFoundError(absl::StrCat(field, " '", id,
                                            "' is not stored on this server: upload it "
                                            "with UploadScenarios"));
  }
  return set;
}

absl::Status CheckPositions(absl::string_view field, const std::vector<float>& values,
                            int64_t rows) {
  for (size_t k = 0; k < values.size(); ++k) {
    const double value = values[k];
    if (!(std::abs(value) <= kMaxPosition)) {  // also NaN
      const int64_t row = static_cast<int64_t>(k) % rows;
      const int64_t column = static_cast<int64_t>(k) / rows;
      return Invalid(absl::StrCat(field, "[", row, ", ", column, "]"), value,
                     absl::StrCat("must be finite with |value| <= ", kMaxPosition));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<JobSpec> ToJobSpec(const v1::PriceRequest& request, ScenarioStore& store) {
  JobSpec spec;
  Preparation prep;
  ASSIGN_OR_RETURN(spec.market, ToMarket(request, &prep));
  const int64_t issuers = spec.market.issuers();

  RETURN_IF_ERROR(ToReturns(request, store, &prep, &spec));
  if (!spec.historical()) {
    RETURN_IF_ERROR(CheckRange("paths", request.paths(), 1, kMaxPaths));
    spec.paths = request.paths();
  }
  if (spec.paths * issuers > kMaxPathIssuerProduct) {
    return Invalid("paths", spec.paths,
                   absl::StrCat("paths * issuers must be <= ", kMaxPathIssuerProduct, " (issuers ",
                                issuers, ")"));
  }
  spec.seed = request.seed();
  spec.antithetic = request.antithetic();
  ASSIGN_OR_RETURN(spec.precision, ToPrecision(request.precision()));

  ASSIGN_OR_RETURN(spec.instruments, ToInstruments(request, spec.market));
  const int64_t rows = spec.position_rows();
  if (spec.paths * rows > kMaxPathIssuerProduct) {
    return Invalid("instruments size", rows,
                   absl::StrCat("paths * instruments must be <= ", kMaxPathIssuerProduct,
                                " (paths ", spec.paths, ")"));
  }
  ASSIGN_OR_RETURN(spec.scenarios, ToScenarios(request.scenarios(), rows,
                                               spec.instruments.empty() ? "the issuer count"
                                                                        : "the instrument count",
                                               store, &prep));

  RETURN_IF_ERROR(ToColumns(request, spec.scenarios.columns(), &spec));
  ASSIGN_OR_RETURN(spec.output, ToOutput(request.output()));
  RETURN_IF_ERROR(CheckBookOutput(spec));
  RETURN_IF_ERROR(ToContributions(request.output().statistics(), &spec));
  ASSIGN_OR_RETURN(spec.target, ToTarget(request, &spec));
  RETURN_IF_ERROR(CheckMomentsShortcut(request, spec));

  RETURN_IF_ERROR(CheckRange("priority", request.priority(), -100, 100));
  spec.priority = request.priority();
  if (!prep.empty()) {
    spec.prepare = [prep = std::move(prep), &store](JobSpec& job) { return prep.Run(store, job); };
  }
  return spec;
}

}  // namespace pricer
