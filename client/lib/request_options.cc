#include "client/lib/request_options.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/lib/instruments_csv.h"
#include "client/lib/market_csv.h"
#include "client/lib/npy.h"
#include "common/status_macros.h"
#include "pricer/v1/client_protocol.pb.h"

namespace pricer {

PriceOptions SeedPreset() {
  const v1::SeedPreset& preset = v1::SeedPreset::default_instance();
  PriceOptions seed;
  seed.preset = "seed";
  seed.issuers = preset.issuers();
  seed.paths = preset.paths();
  seed.seed = preset.seed();
  seed.rate = preset.rate();
  seed.maturity = preset.maturity();
  seed.scenarios = preset.scenarios();
  return seed;
}

namespace {

// The preset `flags` name (none: nothing), then the flags over it.
absl::StatusOr<PriceOptions> OverPreset(const PriceOptions& flags) {
  PriceOptions o;
  if (flags.preset.has_value()) {
    if (*flags.preset != "seed") {
      return absl::InvalidArgumentError(
          absl::StrCat("--preset '", *flags.preset, "' is unknown; the presets are: seed"));
    }
    o = SeedPreset();
  }
  auto over = [](auto& to, const auto& from) {
    if (from.has_value()) to = from;
  };
  over(o.issuers, flags.issuers);
  over(o.market_file, flags.market_file);
  over(o.paths, flags.paths);
  over(o.seed, flags.seed);
  over(o.rate, flags.rate);
  over(o.maturity, flags.maturity);
  over(o.scenarios, flags.scenarios);
  over(o.scenarios_file, flags.scenarios_file);
  over(o.scenario_set, flags.scenario_set);
  over(o.column_begin, flags.column_begin);
  over(o.column_end, flags.column_end);
  over(o.chunk_columns, flags.chunk_columns);
  // What no preset sets.
  o.correlation_file = flags.correlation_file;
  o.antithetic = flags.antithetic;
  o.instruments_file = flags.instruments_file;
  o.returns_file = flags.returns_file;
  o.returns_set = flags.returns_set;
  o.precision = flags.precision;
  o.priority = flags.priority;
  o.full = flags.full;
  o.terminal_prices = flags.terminal_prices;
  o.instrument_values = flags.instrument_values;
  o.statistics = flags.statistics;
  o.contributions = flags.contributions;
  o.delta = flags.delta;
  o.vega = flags.vega;
  o.errors = flags.errors;
  o.error_confidence = flags.error_confidence;
  o.moments_from_covariance = flags.moments_from_covariance;
  o.error_target = flags.error_target;
  o.max_paths = flags.max_paths;
  // A file named on the command line replaces the preset's generated data.
  if (flags.market_file.has_value() && !flags.issuers.has_value()) o.issuers.reset();
  if ((flags.scenarios_file.has_value() || flags.scenario_set.has_value()) &&
      !flags.scenarios.has_value()) {
    o.scenarios.reset();
  }
  // Historical returns give the paths.
  if ((flags.returns_file.has_value() || flags.returns_set.has_value()) &&
      !flags.paths.has_value()) {
    o.paths.reset();
  }
  return o;
}

// The market: a CSV file, or issuers drawn as in the original example; the
// correlation of their shocks; and a book on the issuers.
absl::Status SetMarket(const PriceOptions& o, v1::PriceRequest& request) {
  if (o.market_file.has_value() && o.issuers.has_value()) {
    return absl::InvalidArgumentError("give either --market-file or --issuers, not both");
  }
  MarketCsv file;
  if (o.market_file.has_value()) {
    ASSIGN_OR_RETURN(file, ReadMarketCsv(*o.market_file));
    *request.mutable_market()->mutable_explicit_() = std::move(file.market);
  } else if (o.issuers.has_value()) {
    const v1::SeedPreset& draws = v1::SeedPreset::default_instance();
    v1::GeneratedMarket* market = request.mutable_market()->mutable_generated();
    market->set_issuers(*o.issuers);
    market->set_seed(o.seed.value_or(0));
    market->set_spot_min(draws.spot_min());
    market->set_spot_max(draws.spot_max());
    market->set_volatility_min(draws.volatility_min());
    market->set_volatility_max(draws.volatility_max());
  } else {
    return absl::InvalidArgumentError("no market: give --market-file, --issuers or --preset seed");
  }
  if (o.correlation_file.has_value()) {
    ASSIGN_OR_RETURN(const CorrelationCsv csv, ReadCorrelationCsv(*o.correlation_file));
    ASSIGN_OR_RETURN(const std::vector<double> correlation,
                     CorrelationInIssuerOrder(csv, file.issuers, *o.correlation_file,
                                              o.market_file.value_or("")));
    request.mutable_market()->mutable_correlation()->Assign(correlation.begin(), correlation.end());
  }
  if (o.instruments_file.has_value()) {
    ASSIGN_OR_RETURN(
        std::vector<v1::Instrument> book,
        ReadInstrumentsCsv(*o.instruments_file, file.issuers, o.market_file.value_or("")));
    for (v1::Instrument& instrument : book) *request.add_instruments() = std::move(instrument);
  }
  return absl::OkStatus();
}

// Historical returns: a .npy file sent inline or a stored set.
absl::Status SetReturns(const PriceOptions& o, v1::PriceRequest& request) {
  if (o.returns_file.has_value() && o.returns_set.has_value()) {
    return absl::InvalidArgumentError("give either --returns-file or --returns-set, not both");
  }
  if (o.returns_set.has_value()) request.mutable_returns()->set_scenario_set(*o.returns_set);
  if (!o.returns_file.has_value()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const NpyMatrix r, ReadNpyMatrix(*o.returns_file));
  v1::Matrix* matrix = request.mutable_returns()->mutable_matrix();
  matrix->set_rows(r.rows);
  matrix->set_columns(r.columns);
  matrix->set_values(reinterpret_cast<const char*>(r.values.data()), r.values.size() * 4);
  return absl::OkStatus();
}

// The paths and how they are drawn and computed.
absl::Status SetModel(const PriceOptions& o, v1::PriceRequest& request) {
  request.set_antithetic(o.antithetic);
  request.set_priority(o.priority.value_or(0));
  if (o.precision.has_value()) {
    v1::Precision precision = v1::PRECISION_FP32;
    if (*o.precision == "tf32") {
      precision = v1::PRECISION_TF32;
    } else if (*o.precision == "bf16") {
      precision = v1::PRECISION_BF16;
    } else if (*o.precision != "fp32") {
      return absl::InvalidArgumentError(
          absl::StrCat("--precision '", *o.precision, "' is not one of fp32, tf32, bf16"));
    }
    request.set_precision(precision);
  }
  const bool historical = o.returns_file.has_value() || o.returns_set.has_value();
  if (!o.paths.has_value() && !historical) {
    return absl::InvalidArgumentError("no path count: give --paths or --preset seed");
  }
  request.set_paths(o.paths.value_or(0));
  request.set_seed(o.seed.value_or(0));
  request.set_rate(o.rate.value_or(0.0));
  request.set_maturity(o.maturity.value_or(1.0));
  return absl::OkStatus();
}

// The scenarios: a .npy file sent inline, a stored set, or columns drawn as
// in the original example; and the column range.
absl::Status SetScenarios(const PriceOptions& o, v1::PriceRequest& request) {
  if (int{o.scenarios_file.has_value()} + int{o.scenarios.has_value()} +
          int{o.scenario_set.has_value()} >
      1) {
    return absl::InvalidArgumentError(
        "give one of --scenarios, --scenarios-file and --scenario-set");
  }
  if (o.scenarios_file.has_value()) {
    ASSIGN_OR_RETURN(const NpyMatrix a, ReadNpyMatrix(*o.scenarios_file));
    v1::Matrix* matrix = request.mutable_scenarios()->mutable_matrix();
    matrix->set_rows(a.rows);
    matrix->set_columns(a.columns);
    matrix->set_values(reinterpret_cast<const char*>(a.values.data()), a.values.size() * 4);
  } else if (o.scenario_set.has_value()) {
    if (o.column_begin.has_value() && !o.column_end.has_value()) {
      return absl::InvalidArgumentError("with --scenario-set, give --column-end too");
    }
    request.mutable_scenarios()->set_scenario_set(*o.scenario_set);
  } else if (o.scenarios.has_value()) {
    const v1::SeedPreset& draws = v1::SeedPreset::default_instance();
    v1::GeneratedScenarios* scenarios = request.mutable_scenarios()->mutable_generated();
    scenarios->set_columns(*o.scenarios);
    scenarios->set_seed(o.seed.value_or(0));
    scenarios->set_value_min(draws.scenario_value_min());
    scenarios->set_value_max(draws.scenario_value_max());
  } else {
    return absl::InvalidArgumentError(
        "no scenarios: give --scenarios, --scenarios-file, --scenario-set or --preset seed");
  }
  // --column-begin alone prices to the last column.
  const int64_t columns = request.scenarios().has_matrix()
                              ? request.scenarios().matrix().columns()
                              : request.scenarios().generated().columns();
  request.set_column_begin(o.column_begin.value_or(0));
  request.set_column_end(o.column_end.value_or(o.column_begin.has_value() ? columns : 0));
  return absl::OkStatus();
}

// The precision target: a statistic asked for, with --max-paths, of
// statistics only.
absl::Status SetTarget(const PriceOptions& o, v1::PriceRequest& request) {
  if (!o.error_target.has_value()) {
    if (o.max_paths.has_value())
      return absl::InvalidArgumentError("--max-paths needs --error-target");
    return absl::OkStatus();
  }
  const std::string& name = o.error_target->item.name;
  if (!o.max_paths.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--error-target ", name, " needs --max-paths, the most paths a column may use"));
  }
  if (*o.max_paths < request.paths()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-paths ", *o.max_paths, " is below --paths ", request.paths()));
  }
  if (o.full || o.terminal_prices || o.instrument_values) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--error-target prices statistics only: it cannot write ", o.full ? "--full-out"
                                                                   : o.terminal_prices
                                                                       ? "--prices-out"
                                                                       : "--values-out"));
  }
  std::vector<std::string> names;
  for (const StatisticItem& item : o.statistics) {
    if (item.name == name) {
      *request.mutable_target() = ToPrecisionTarget(*o.error_target, *o.max_paths);
      return absl::OkStatus();
    }
    names.push_back(item.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("--error-target ", name,
                                                 ": the statistic is not among --stats (",
                                                 absl::StrJoin(names, ","), "); add it there"));
}

// The statistics and, with --errors (or a target), the confidence of their
// intervals.
absl::Status SetStatistics(const PriceOptions& o, v1::OutputOptions& output) {
  const bool errors = o.errors || o.error_target.has_value();
  if (o.error_confidence.has_value()) {
    if (!errors) return absl::InvalidArgumentError("--error-confidence needs --errors");
    if (!(*o.error_confidence > 0 && *o.error_confidence < 1)) {  // NaN fails too
      return absl::InvalidArgumentError(
          absl::StrCat("--error-confidence ", *o.error_confidence, " must be in (0, 1)"));
    }
  }
  if (o.statistics.empty() && o.contributions.empty()) return absl::OkStatus();
  v1::StatisticsSelection* selection = output.mutable_statistics();
  *selection = ToSelection(o.statistics);
  for (const StatisticItem& c : o.contributions) {
    const bool es = c.kind == StatisticItem::Kind::kEs;
    auto* levels = es ? selection->mutable_es() : selection->mutable_var();
    if (std::find(levels->begin(), levels->end(), c.level) == levels->end()) levels->Add(c.level);
    (es ? selection->mutable_es_contributions() : selection->mutable_var_contributions())
        ->Add(c.level);
  }
  selection->set_delta(o.delta);
  selection->set_vega(o.vega);
  selection->set_moments_from_covariance(o.moments_from_covariance);
  if (errors) {
    selection->set_errors(true);
    selection->set_error_confidence(o.error_confidence.value_or(0.95));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::PriceRequest> BuildPriceRequest(const PriceOptions& flags) {
  ASSIGN_OR_RETURN(const PriceOptions o, OverPreset(flags));
  v1::PriceRequest request;
  RETURN_IF_ERROR(SetMarket(o, request));
  RETURN_IF_ERROR(SetModel(o, request));
  RETURN_IF_ERROR(SetReturns(o, request));
  RETURN_IF_ERROR(SetScenarios(o, request));
  v1::OutputOptions* output = request.mutable_output();
  output->set_full(o.full);
  RETURN_IF_ERROR(SetStatistics(o, *output));
  RETURN_IF_ERROR(SetTarget(o, request));
  output->set_terminal_prices(o.terminal_prices);
  output->set_instrument_values(o.instrument_values);
  output->set_chunk_columns(o.chunk_columns.value_or(0));
  return request;
}

}  // namespace pricer
