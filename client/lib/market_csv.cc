#include "client/lib/market_csv.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/lib/csv_table.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

bool IsNumber(const std::string& cell) {
  double value = 0;
  return absl::SimpleAtod(cell, &value);
}

// Whether the first row of a correlation file is a header: `,A,B`, `A,B`
// (not `A,1,0.3`, a labelled row, nor `1,0.3`).
bool IsHeader(const std::vector<std::string>& cells) {
  if (cells.front().empty()) return true;
  if (cells.size() == 1) return !IsNumber(cells.front());
  return !std::all_of(cells.begin() + 1, cells.end(), IsNumber);
}

// A label given twice cannot say which row is whose.
absl::Status CheckUnique(const std::string& path, const std::vector<std::string>& labels) {
  std::set<std::string> seen;
  for (const std::string& label : labels) {
    if (!seen.insert(label).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": the label '", label, "' names two issuers"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MarketCsv> ReadMarketCsv(const std::string& path) {
  ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, ReadRows(path, "market file"));
  if (rows.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": empty; expected a header naming spot and volatility"));
  }
  const CsvRow& header = rows.front();
  ASSIGN_OR_RETURN(const std::optional<size_t> spot, FindColumn(path, header, "spot"));
  ASSIGN_OR_RETURN(const std::optional<size_t> volatility, FindColumn(path, header, "volatility"));
  ASSIGN_OR_RETURN(std::optional<size_t> issuer, FindColumn(path, header, "issuer"));
  if (!spot.has_value() || !volatility.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", header.line, ": the header '", absl::StrJoin(header.cells, ","),
                     "' has no column '", spot.has_value() ? "volatility" : "spot",
                     "'; expected a header naming spot and volatility (e.g. spot,volatility)"));
  }
  if (!issuer.has_value() && header.cells.front().empty()) issuer = 0;  // pandas' index
  MarketCsv csv;
  for (size_t r = 1; r < rows.size(); ++r) {
    const CsvRow& row = rows[r];
    RETURN_IF_ERROR(CheckRowWidth(path, header, row));
    ASSIGN_OR_RETURN(const double s, NumberAt(path, row, *spot, "spot"));
    ASSIGN_OR_RETURN(const double v, NumberAt(path, row, *volatility, "volatility"));
    csv.market.add_spot(s);
    csv.market.add_volatility(v);
    if (issuer.has_value()) csv.issuers.push_back(row.cells[*issuer]);
  }
  return csv;
}

absl::StatusOr<CorrelationCsv> ReadCorrelationCsv(const std::string& path) {
  ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, ReadRows(path, "correlation file"));
  // A first row with anything but numbers is a header of labels, unless
  // only its first cell is: a labelled row (`A,1,0.3`).
  const bool has_header = !rows.empty() && IsHeader(rows[0].cells);
  const size_t first = has_header ? 1 : 0;
  if (rows.size() <= first) return absl::InvalidArgumentError(absl::StrCat(path, ": no numbers"));
  const size_t n = rows.size() - first, width = rows[first].cells.size();
  bool label_column = false;
  for (size_t r = first; r < rows.size(); ++r) {
    if (rows[r].cells.size() != width) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", rows[r].line, ": ",
                                                     rows[r].cells.size(),
                                                     " cells, but the first row has ", width));
    }
    label_column = label_column || !IsNumber(rows[r].cells.front());
  }
  // One more cell than rows: a column of labels, if the header or a label
  // says so (a first column of numbers only is more likely a mistake).
  label_column = width == n + 1 && (label_column || has_header);
  if (width != n + (label_column ? 1 : 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", n, " rows of ", width, " numbers is not square"));
  }
  CorrelationCsv csv;
  for (size_t r = first; r < rows.size(); ++r) {
    if (label_column) csv.labels.push_back(rows[r].cells.front());
    for (size_t k = label_column ? 1 : 0; k < width; ++k) {
      ASSIGN_OR_RETURN(const double value, NumberAt(path, rows[r], k, absl::StrCat(k + 1)));
      csv.values.push_back(value);
    }
  }
  if (has_header) {
    const std::vector<std::string>& cells = rows[0].cells;
    if (cells.size() != n && cells.size() != width) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", rows[0].line, ": a header of ",
                                                     cells.size(), " labels for ", n, " columns"));
    }
    std::vector<std::string> labels(cells.end() - static_cast<std::ptrdiff_t>(n), cells.end());
    if (label_column && labels != csv.labels) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": the labels of the header (", absl::StrJoin(labels, ", "),
                       ") and of the first column (", absl::StrJoin(csv.labels, ", "), ") differ"));
    }
    csv.labels = std::move(labels);
  }
  RETURN_IF_ERROR(CheckUnique(path, csv.labels));
  return csv;
}

absl::StatusOr<std::vector<double>> CorrelationInIssuerOrder(
    const CorrelationCsv& correlation, const std::vector<std::string>& issuers,
    const std::string& correlation_path, const std::string& market_path) {
  if (correlation.labels.empty() || issuers.empty()) return correlation.values;
  RETURN_IF_ERROR(CheckUnique(market_path, issuers));
  std::map<std::string, size_t> row_of;
  for (size_t k = 0; k < correlation.labels.size(); ++k) row_of[correlation.labels[k]] = k;
  std::vector<std::string> not_in_correlation, not_in_market;
  const std::set<std::string> in_market(issuers.begin(), issuers.end());
  for (const std::string& issuer : issuers) {
    if (!row_of.contains(issuer)) not_in_correlation.push_back(issuer);
  }
  for (const std::string& label : correlation.labels) {
    if (!in_market.contains(label)) not_in_market.push_back(label);
  }
  if (!not_in_correlation.empty() || !not_in_market.empty()) {
    std::string message =
        absl::StrCat(correlation_path, ": its labels are not the issuers of ", market_path);
    if (!not_in_correlation.empty()) {
      absl::StrAppend(&message,
                      "; issuers without a label: ", absl::StrJoin(not_in_correlation, ", "));
    }
    if (!not_in_market.empty()) {
      absl::StrAppend(&message, "; labels of no issuer: ", absl::StrJoin(not_in_market, ", "));
    }
    return absl::InvalidArgumentError(message);
  }
  const size_t n = issuers.size();
  std::vector<double> ordered(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      ordered[i * n + j] = correlation.values[row_of.at(issuers[i]) * n + row_of.at(issuers[j])];
    }
  }
  return ordered;
}

}  // namespace pricer
