// The CSV files people and pandas write, as the client reads them: rows of
// cells, trimmed, a cell in double quotes may hold commas ("ACME, Inc."; ""
// is a quote; on one line); columns found by their header names. The market
// and correlation files (market_csv.h) and the instruments file
// (instruments_csv.h) are read with it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pricer {

// One non-blank line of a CSV file: its number (from 1) and its cells,
// surrounding whitespace trimmed.
struct CsvRow {
  int line = 0;
  std::vector<std::string> cells;
};

// The non-blank rows of the file at `path` (`what` names it in errors:
// "market file"), a leading byte order mark dropped.
absl::StatusOr<std::vector<CsvRow>> ReadRows(const std::string& path, absl::string_view what);

// The one column of `header` named `name`; none when there is none, an
// error when there are two.
absl::StatusOr<std::optional<size_t>> FindColumn(const std::string& path, const CsvRow& header,
                                                 absl::string_view name);

// An error naming `row`'s line unless it has as many cells as `header`.
absl::Status CheckRowWidth(const std::string& path, const CsvRow& header, const CsvRow& row);

// The number in `row`'s cell `column`, named `name` in the message.
absl::StatusOr<double> NumberAt(const std::string& path, const CsvRow& row, size_t column,
                                absl::string_view name);

}  // namespace pricer
