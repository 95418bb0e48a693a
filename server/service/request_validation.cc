#include "server/service/request_validation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/model/correlation.h"

namespace pricer {
namespace {

static_assert(std::endian::native == std::endian::little,
              "matrices travel as little-endian float32; add a byte swap for this host");

// Prints a double as StrCat does, but NaN as "NaN".
template <typename T>
std::string Show(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) return "NaN";
  }
  return absl::StrCat(value);
}

absl::Status Invalid(absl::string_view field, auto value, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, " is ", Show(value), ": ", rule));
}

absl::Status CheckFinite(absl::string_view field, double value) {
  if (std::isfinite(value)) return absl::OkStatus();
  return Invalid(field, value, "must be finite");
}

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t low, int64_t high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return Invalid(field, value, absl::StrCat("must be in [", low, ", ", high, "]"));
}

// What a request leaves for the job's first engine task (JobSpec::prepare):
// the steps too heavy for a gRPC thread.
struct Preparation {
  std::optional<MarketDraw> draw;
  std::vector<double> correlation;  // N x N, to factor
  std::string scenario_set;         // a stored set to read

  absl::Status Run(ScenarioStore& store, JobSpec& job) const {
    Market& market = job.market;
    if (draw.has_value()) {
      const std::vector<double> spot = DrawSpots(*draw), volatility = DrawVolatilities(*draw);
      std::copy(spot.begin(), spot.end(), market.spot.begin());
      std::copy(volatility.begin(), volatility.end(), market.volatility.begin());
    }
    if (!correlation.empty()) {
      ASSIGN_OR_RETURN(const std::vector<float> factor,
                       CholeskyFactor(correlation, market.issuers()));
      std::copy(factor.begin(), factor.end(), market.correlation_factor.begin());
    }
    if (!scenario_set.empty()) RETURN_IF_ERROR(ReadStoredSet(store, job.scenarios));
    return absl::OkStatus();
  }

  absl::Status ReadStoredSet(ScenarioStore& store, ScenarioMatrix& scenarios) const {
    absl::StatusOr<ScenarioMatrix> set = store.Get(scenario_set);
    if (absl::IsNotFound(set.status())) {
      return absl::NotFoundError(absl::StrCat("scenarios.scenario_set '", scenario_set,
                                              "' is no longer stored on this server: upload it "
                                              "again with UploadScenarios"));
    }
    RETURN_IF_ERROR(set.status());
    if (set->rows() != scenarios.rows() || set->columns() != scenarios.columns()) {
      return absl::DataLossError(absl::StrCat("scenario set ", scenario_set, " changed shape"));
    }
    scenarios.SetValues(set->shared_values());
    return absl::OkStatus();
  }
};

absl::StatusOr<Market> ToMarket(const v1::PriceRequest& request, Preparation* prep) {
  Market market;
  const v1::Market& m = request.market();
  switch (m.source_case()) {
    case v1::Market::kExplicit: {
      const v1::ExplicitMarket& e = m.explicit_();
      RETURN_IF_ERROR(CheckRange("market.explicit.spot size", e.spot_size(), 1, kMaxIssuers));
      if (e.volatility_size() != e.spot_size()) {
        return Invalid("market.explicit.volatility size", e.volatility_size(),
                       absl::StrCat("must equal the spot size ", e.spot_size()));
      }
      for (int i = 0; i < e.spot_size(); ++i) {
        const std::string field = absl::StrCat("market.explicit.spot[", i, "]");
        RETURN_IF_ERROR(CheckFinite(field, e.spot(i)));
        if (!(e.spot(i) > 0) || e.spot(i) > kMaxSpot) {
          return Invalid(field, e.spot(i), absl::StrCat("must be in (0, ", kMaxSpot, "]"));
        }
      }
      for (int i = 0; i < e.volatility_size(); ++i) {
        const std::string field = absl::StrCat("market.explicit.volatility[", i, "]");
        RETURN_IF_ERROR(CheckFinite(field, e.volatility(i)));
        if (e.volatility(i) < 0) return Invalid(field, e.volatility(i), "must be >= 0");
      }
      market.spot.assign(e.spot().begin(), e.spot().end());
      market.volatility.assign(e.volatility().begin(), e.volatility().end());
      break;
    }
    case v1::Market::kGenerated: {
      const v1::GeneratedMarket& g = m.generated();
      RETURN_IF_ERROR(CheckRange("market.generated.issuers", g.issuers(), 1, kMaxIssuers));
      for (auto [field, value] : {std::pair{"market.generated.spot_min", g.spot_min()},
                                  {"market.generated.spot_max", g.spot_max()},
                                  {"market.generated.volatility_min", g.volatility_min()},
                                  {"market.generated.volatility_max", g.volatility_max()}}) {
        RETURN_IF_ERROR(CheckFinite(field, value));
      }
      if (!(g.spot_min() > 0))
        return Invalid("market.generated.spot_min", g.spot_min(), "must be > 0");
      if (g.spot_max() < g.spot_min() || g.spot_max() > kMaxSpot) {
        return Invalid("market.generated.spot_max", g.spot_max(),
                       absl::StrCat("must be in [spot_min ", g.spot_min(), ", ", kMaxSpot, "]"));
      }
      if (g.volatility_min() < 0) {
        return Invalid("market.generated.volatility_min", g.volatility_min(), "must be >= 0");
      }
      if (g.volatility_max() < g.volatility_min()) {
        return Invalid("market.generated.volatility_max", g.volatility_max(),
                       absl::StrCat("must be >= volatility_min ", g.volatility_min()));
      }
      // Drawn by the job's preparation; the sizes are final now.
      prep->draw = MarketDraw{g.issuers(),  g.seed(),           g.spot_min(),
                              g.spot_max(), g.volatility_min(), g.volatility_max()};
      market.spot.assign(static_cast<size_t>(g.issuers()), 0.0);
      market.volatility.assign(static_cast<size_t>(g.issuers()), 0.0);
      break;
    }
    case v1::Market::SOURCE_NOT_SET:
      return absl::InvalidArgumentError(
          "market is not set: give market.explicit or market.generated");
  }
  RETURN_IF_ERROR(CheckFinite("rate", request.rate()));
  if (request.rate() < -1 || request.rate() > 1) {
    return Invalid("rate", request.rate(), "must be in [-1, 1]");
  }
  RETURN_IF_ERROR(CheckFinite("maturity", request.maturity()));
  if (!(request.maturity() > 0) || request.maturity() > 100) {
    return Invalid("maturity", request.maturity(), "must be in (0, 100] years");
  }
  if (std::abs(request.rate()) * request.maturity() > kMaxRateTimesMaturity) {
    return Invalid("rate", request.rate(),
                   absl::StrCat("|rate| * maturity must be <= ", kMaxRateTimesMaturity,
                                " (maturity ", request.maturity(), ")"));
  }
  // sigma * sqrt(T) bounds the largest shock, and so keeps ST finite in
  // float32; a generated market may draw up to volatility_max.
  const double root_t = std::sqrt(request.maturity());
  const int64_t checked = m.has_generated() ? 1 : market.issuers();
  for (int64_t i = 0; i < checked; ++i) {
    const double value = m.has_generated() ? m.generated().volatility_max() : market.volatility[i];
    if (value * root_t > kMaxVolatilityTimesRootMaturity) {
      const std::string field = m.has_generated()
                                    ? "market.generated.volatility_max"
                                    : absl::StrCat("market.explicit.volatility[", i, "]");
      return Invalid(
          field, value,
          absl::StrCat("volatility * sqrt(maturity) must be <= ", kMaxVolatilityTimesRootMaturity,
                       " (maturity ", request.maturity(), ")"));
    }
  }
  market.rate = request.rate();
  market.maturity = request.maturity();

  if (m.correlation_size() > 0) {
    const int64_t n = market.issuers();
    if (n > kMaxCorrelatedIssuers) {
      return Invalid("market.correlation size", m.correlation_size(),
                     absl::StrCat("a correlation matrix is accepted for at most ",
                                  kMaxCorrelatedIssuers, " issuers (here ", n, ")"));
    }
    if (m.correlation_size() != n * n) {
      return Invalid("market.correlation size", m.correlation_size(),
                     absl::StrCat("must be issuers^2 = ", n * n));
    }
    // Factored by the job's preparation (a Cholesky of up to 4096 x 4096);
    // its size marks the issuers correlated now.
    prep->correlation.assign(m.correlation().begin(), m.correlation().end());
    market.correlation_factor.assign(static_cast<size_t>(n * n), 0.0f);
  }
  return market;
}

absl::StatusOr<ScenarioMatrix> ToScenarios(const v1::Scenarios& scenarios, int64_t issuers,
                                           const ScenarioStore& store, Preparation* prep) {
  switch (scenarios.source_case()) {
    case v1::Scenarios::kScenarioSet: {
      // Its shape now; its values are read by the job's preparation.
      absl::StatusOr<ScenarioStore::Shape> set = store.ShapeOf(scenarios.scenario_set());
      if (!set.ok()) {
        if (absl::IsNotFound(set.status())) {
          return absl::NotFoundError(absl::StrCat("scenarios.scenario_set '",
                                                  scenarios.scenario_set(),
                                                  "' is not stored on this server: upload it "
                                                  "with UploadScenarios"));
        }
        return set.status();
      }
      if (set->rows != issuers) {
        return Invalid("scenarios.scenario_set rows", set->rows,
                       absl::StrCat("must equal the issuer count ", issuers, " (set ",
                                    scenarios.scenario_set(), " is ", set->rows, " x ",
                                    set->columns, ")"));
      }
      prep->scenario_set = scenarios.scenario_set();
      return ScenarioMatrix::Deferred(set->rows, set->columns);
    }
    case v1::Scenarios::kMatrix: {
      const v1::Matrix& m = scenarios.matrix();
      if (m.rows() != issuers) {
        return Invalid("scenarios.matrix.rows", m.rows(),
                       absl::StrCat("must equal the issuer count ", issuers));
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
      RETURN_IF_ERROR(CheckRange("scenarios.generated.columns", g.columns(), 1, kMaxScenarioColumns));
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
    absl::StatusOr<std::vector<double>> levels = ToLevels(field, *from, open);
    if (!levels.ok()) return levels.status();
    *to = *std::move(levels);
  }
  if (!selection.any()) return StatisticsSelection::Basic();
  return selection;
}

}  // namespace

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

  RETURN_IF_ERROR(CheckRange("paths", request.paths(), 1, kMaxPaths));
  if (request.paths() * issuers > kMaxPathIssuerProduct) {
    return Invalid("paths", request.paths(),
                   absl::StrCat("paths * issuers must be <= ", kMaxPathIssuerProduct, " (issuers ",
                                issuers, ")"));
  }
  spec.paths = request.paths();
  spec.seed = request.seed();
  spec.antithetic = request.antithetic();
  switch (request.precision()) {
    case v1::PRECISION_FP32:
      spec.precision = GemmPrecision::kFloat32;
      break;
    case v1::PRECISION_TF32:
      spec.precision = GemmPrecision::kTensorFloat32;
      break;
    case v1::PRECISION_BF16:
      spec.precision = GemmPrecision::kBFloat16;
      break;
    default:
      return Invalid("precision", static_cast<int>(request.precision()),
                     "must be PRECISION_FP32 (0), PRECISION_TF32 (1) or PRECISION_BF16 (2)");
  }

  ASSIGN_OR_RETURN(spec.scenarios, ToScenarios(request.scenarios(), issuers, store, &prep));

  const int64_t columns = spec.scenarios.columns();
  spec.column_begin = request.column_begin();
  spec.column_end = request.column_end();
  if (spec.column_begin == 0 && spec.column_end == 0) spec.column_end = columns;
  if (spec.column_begin < 0 || spec.column_begin >= columns) {
    return Invalid(
        "column_begin", spec.column_begin,
        absl::StrCat("must be in [0, ", columns, ") for ", columns, " scenario columns"));
  }
  if (spec.column_end <= spec.column_begin || spec.column_end > columns) {
    return Invalid("column_end", spec.column_end,
                   absl::StrCat("must be in (column_begin ", spec.column_begin, ", ", columns,
                                "] for ", columns, " scenario columns"));
  }

  const v1::OutputOptions& output = request.output();
  RETURN_IF_ERROR(CheckRange("output.chunk_columns", output.chunk_columns(), 0, kMaxChunkColumns));
  spec.output.full = output.full();
  spec.output.terminal_prices = output.terminal_prices();
  if (output.has_statistics() || (!output.full() && !output.terminal_prices())) {
    absl::StatusOr<StatisticsSelection> statistics = ToStatistics(output.statistics());
    if (!statistics.ok()) return statistics.status();
    spec.output.statistics = *std::move(statistics);
  } else {
    spec.output.statistics = StatisticsSelection();
  }
  spec.output.chunk_columns = output.chunk_columns();

  RETURN_IF_ERROR(CheckRange("priority", request.priority(), -100, 100));
  spec.priority = request.priority();
  if (prep.draw.has_value() || !prep.correlation.empty() || !prep.scenario_set.empty()) {
    spec.prepare = [prep = std::move(prep), &store](JobSpec& job) { return prep.Run(store, job); };
  }
  return spec;
}

}  // namespace pricer
