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
#include "common/status_macros.h"

namespace pricer {
namespace {

// One non-blank line of a CSV file: its number (from 1) and its cells,
// surrounding whitespace trimmed.
struct CsvRow {
  int line = 0;
  std::vector<std::string> cells;
};

// The cells of line `line`, quoted as pandas and spreadsheets quote them
// (RFC 4180, on one line): a cell in double quotes may hold commas, and ""
// in it is one quote. Whitespace around a cell is trimmed, not inside quotes.
absl::StatusOr<std::vector<std::string>> SplitCells(absl::string_view text, const std::string& path,
                                                    int line) {
  const auto skip_spaces = [&](size_t k) {
    while (k < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[k]))) ++k;
    return k;
  };
  std::vector<std::string> cells;
  for (size_t k = 0;; ++k) {  // k: the start of a cell, then its end (a comma or the end)
    k = skip_spaces(k);
    std::string cell;
    if (k < text.size() && text[k] == '"') {
      for (++k;; ++k) {
        if (k == text.size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              path, ":", line, ", cell ", cells.size() + 1,
              ": the quote is not closed on this line (a cell over several lines is not "
              "supported)"));
        }
        if (text[k] != '"') {
          cell += text[k];
        } else if (k + 1 < text.size() && text[k + 1] == '"') {
          cell += text[++k];
        } else {
          break;
        }
      }
      k = skip_spaces(k + 1);
      if (k < text.size() && text[k] != ',') {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ", cell ", cells.size() + 1,
                                                       ": text after the closing quote"));
      }
    } else {
      const size_t end = std::min(text.find(',', k), text.size());
      cell = std::string(absl::StripAsciiWhitespace(text.substr(k, end - k)));
      k = end;
    }
    cells.push_back(std::move(cell));
    if (k >= text.size()) return cells;
  }
}

absl::StatusOr<std::vector<CsvRow>> ReadRows(const std::string& path, absl::string_view what) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", what, " ", path));
  std::vector<CsvRow> rows;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    // The byte order mark a spreadsheet may write first.
    if (line == 1 && absl::StartsWith(text, "\xEF\xBB\xBF")) text.erase(0, 3);
    if (absl::StripAsciiWhitespace(text).empty()) continue;
    ASSIGN_OR_RETURN(std::vector<std::string> cells, SplitCells(text, path, line));
    rows.push_back(CsvRow{line, std::move(cells)});
  }
  return rows;
}

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

// The one column of `header` named `name`; none when there is none.
absl::StatusOr<std::optional<size_t>> FindColumn(const std::string& path, const CsvRow& header,
                                                 absl::string_view name) {
  std::optional<size_t> found;
  for (size_t k = 0; k < header.cells.size(); ++k) {
    if (header.cells[k] != name) continue;
    if (found.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", header.line, ": the header names '",
                                                     name, "' twice (columns ", *found + 1, " and ",
                                                     k + 1, ")"));
    }
    found = k;
  }
  return found;
}

// The number in `row`'s cell `column`, named `name` in the message.
absl::StatusOr<double> NumberAt(const std::string& path, const CsvRow& row, size_t column,
                                absl::string_view name) {
  double value = 0;
  if (!absl::SimpleAtod(row.cells[column], &value)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", row.line, ", column ", name, ": '",
                                                   row.cells[column], "' is not a number"));
  }
  return value;
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
    if (row.cells.size() != header.cells.size()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", row.line, ": ", row.cells.size(),
                                                     " cells, but the header has ",
                                                     header.cells.size()));
    }
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
