#include "client/lib/csv_table.h"

#include <algorithm>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

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

}  // namespace

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

absl::Status CheckRowWidth(const std::string& path, const CsvRow& header, const CsvRow& row) {
  if (row.cells.size() == header.cells.size()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path, ":", row.line, ": ", row.cells.size(),
                                                 " cells, but the header has ",
                                                 header.cells.size()));
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

}  // namespace pricer
