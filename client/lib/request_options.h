// The pricing request a user describes with `pricer price` flags, and the
// `seed` preset that reproduces the original example.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/lib/error_target.h"
#include "client/lib/statistics_list.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

// Every field is optional: a preset fills what the flags leave unset.
struct PriceOptions {
  std::optional<std::string> preset;  // "seed"
  std::optional<int64_t> issuers;     // generated market
  std::optional<std::string> market_file;
  std::optional<int64_t> paths;
  std::optional<uint64_t> seed;
  std::optional<double> rate;
  std::optional<double> maturity;
  std::optional<int64_t> scenarios;  // generated scenario columns
  std::optional<std::string> scenarios_file;
  std::optional<std::string> scenario_set;  // an id from `pricer upload`
  std::optional<int64_t> column_begin;
  std::optional<int64_t> column_end;
  std::optional<int64_t> chunk_columns;
  // N x N CSV (market_csv.h); with labels, reordered to the market file's
  // issuers when it labels them too.
  std::optional<std::string> correlation_file;
  bool antithetic = false;
  // A book (PriceRequest.instruments) from a CSV file (instruments_csv.h);
  // its issuer labels are matched to the market file's.
  std::optional<std::string> instruments_file;
  // Historical returns R (P x N) in place of GBM paths: a .npy file sent
  // inline, or a set stored with `pricer upload`. The paths are then R's
  // rows (a --paths must equal them; the preset's is dropped).
  std::optional<std::string> returns_file;
  std::optional<std::string> returns_set;
  // The lowest GEMM precision allowed: "fp32" (default), "tf32" or "bf16".
  std::optional<std::string> precision;
  // PriceRequest.priority: -100 to 100, default 0.
  std::optional<int32_t> priority;
  bool full = false;
  bool terminal_prices = false;
  bool instrument_values = false;  // a book's V
  // Statistics to ask for (statistics_list.h); empty: none, unless nothing
  // else is asked for either.
  std::vector<StatisticItem> statistics;
  // Levels of ES and VaR whose Euler contributions to ask for
  // (ParseContributionsList: ES's first); each is added to the statistics'
  // es (var) levels when they lack it.
  std::vector<StatisticItem> contributions;
  // StatisticsSelection.delta and vega: the contributed levels' sensitivities.
  bool delta = false;
  bool vega = false;
  // StatisticsSelection.errors: each statistic's Monte Carlo error too, its
  // intervals at error_confidence (in (0, 1), default 0.95).
  bool errors = false;
  std::optional<double> error_confidence;
  // StatisticsSelection.moments_from_covariance: mean and stddev from ST's
  // covariance (the server refuses other statistics, errors and full output).
  bool moments_from_covariance = false;
  // PriceRequest.target: price each column with P, 2P, 4P, ... paths, at
  // most max_paths (required with it), until its error meets the target. The
  // statistic must be among `statistics`; it implies `errors` and refuses
  // `full` and `terminal_prices`.
  std::optional<ErrorTarget> error_target;
  std::optional<int64_t> max_paths;
};

// The original example: 500 issuers with spot ~ U(5, 10) and volatility ~
// U(0, 1), 10,000 paths, 1,000,000 scenario columns ~ U(0, 1), seed 42,
// rate 0.02, maturity 1 year (client_protocol.proto's SeedPreset, whose
// ranges every generated market and scenario set is drawn from).
PriceOptions SeedPreset();

// Fills unset fields from the preset, reads the files, and builds the request.
absl::StatusOr<v1::PriceRequest> BuildPriceRequest(const PriceOptions& options);

}  // namespace pricer
