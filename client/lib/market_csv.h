// The CSV files of `pricer price --market-file` and `--correlation-file`, as
// people and pandas write them: columns found by their header names, cells
// trimmed, a cell in double quotes may hold commas ("ACME, Inc."; "" is a
// quote; on one line), labels of the issuers in a leading index column or a
// header row.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

// A market file and the issuers' labels, when it gives them.
struct MarketCsv {
  v1::ExplicitMarket market;
  // From a column named `issuer`, else a leading column with an empty name
  // (pandas' index: `df.to_csv()` writes `,spot,volatility` then
  // `0,5.1,0.2`); empty when the file has neither.
  std::vector<std::string> issuers;
};

// Reads a header row that names `spot` and `volatility` (in any order, among
// any other columns, which are ignored), then one issuer a row. Errors name
// the file, the line and the column.
//
//   spot,volatility          issuer, volatility, spot, sector
//   100,0.2                  ACME,   0.2,        100,  tech
absl::StatusOr<MarketCsv> ReadMarketCsv(const std::string& path);

// A correlation file: N x N values and the issuers' labels, when it gives
// them.
struct CorrelationCsv {
  std::vector<double> values;       // row-major
  std::vector<std::string> labels;  // N, or empty
};

// Reads N rows of N numbers, with or without a header row of labels and a
// leading column of labels (pandas' `corr.to_csv()` writes `,A,B` then
// `A,1,0.3` and `B,0.3,1`); when both are there they must agree.
absl::StatusOr<CorrelationCsv> ReadCorrelationCsv(const std::string& path);

// The correlation in the order of `issuers` (MarketCsv::issuers): when both
// the correlation and the market have labels, row and column i of the result
// are those of issuers[i], and labels that are not in both are refused,
// naming them; otherwise the file's order. The paths are for the messages.
absl::StatusOr<std::vector<double>> CorrelationInIssuerOrder(
    const CorrelationCsv& correlation, const std::vector<std::string>& issuers,
    const std::string& correlation_path, const std::string& market_path);

}  // namespace pricer
