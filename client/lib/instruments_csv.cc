#include "client/lib/instruments_csv.h"

#include <cstdint>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/lib/csv_table.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

absl::Status CellError(const std::string& path, const CsvRow& row, absl::string_view column,
                       absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ":", row.line, ", column ", column, ": ", why));
}

absl::StatusOr<v1::Instrument::Type> TypeAt(const std::string& path, const CsvRow& row,
                                            size_t column) {
  static const auto* const kTypes =
      new std::map<std::string, v1::Instrument::Type>{{"stock", v1::Instrument::TYPE_STOCK},
                                                      {"forward", v1::Instrument::TYPE_FORWARD},
                                                      {"call", v1::Instrument::TYPE_CALL},
                                                      {"put", v1::Instrument::TYPE_PUT}};
  const auto it = kTypes->find(absl::AsciiStrToLower(row.cells[column]));
  if (it == kTypes->end()) {
    return CellError(path, row, "type",
                     absl::StrCat("'", row.cells[column], "' is not stock, forward, call or put"));
  }
  return it->second;
}

// The issuer of `row`: a label of the market's, else an index from 0.
absl::StatusOr<int64_t> IssuerAt(const std::string& path, const CsvRow& row, size_t column,
                                 const std::map<std::string, int64_t>& index_of,
                                 const std::string& market_path) {
  const std::string& cell = row.cells[column];
  if (const auto it = index_of.find(cell); it != index_of.end()) return it->second;
  int64_t index = 0;
  if (absl::SimpleAtoi(cell, &index) && index >= 0) return index;
  return CellError(path, row, "issuer",
                   index_of.empty()
                       ? absl::StrCat("'", cell,
                                      "' is not an issuer index (the market has no labels to "
                                      "match: give --market-file with an issuer column)")
                       : absl::StrCat("'", cell, "' is not an issuer of ", market_path,
                                      " (its labels) nor an index from 0"));
}

// The number in an optional cell: none when it is empty.
absl::StatusOr<std::optional<double>> OptionalNumberAt(const std::string& path, const CsvRow& row,
                                                       std::optional<size_t> column,
                                                       absl::string_view name) {
  if (!column.has_value() || row.cells[*column].empty()) return std::nullopt;
  ASSIGN_OR_RETURN(const double value, NumberAt(path, row, *column, name));
  return value;
}

}  // namespace

absl::StatusOr<std::vector<v1::Instrument>> ReadInstrumentsCsv(
    const std::string& path, const std::vector<std::string>& labels,
    const std::string& market_path) {
  ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, ReadRows(path, "instruments file"));
  constexpr const char* kExpected = "expected a header naming issuer, type, strike and expiry";
  if (rows.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": empty; ", kExpected));
  const CsvRow& header = rows.front();
  std::map<std::string, std::optional<size_t>> column;
  for (const char* name : {"issuer", "type", "strike", "expiry", "volatility"}) {
    ASSIGN_OR_RETURN(column[name], FindColumn(path, header, name));
    if (!column[name].has_value() && std::string(name) != "volatility") {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", header.line, ": the header '",
                                                     absl::StrJoin(header.cells, ","),
                                                     "' has no column '", name, "'; ", kExpected));
    }
  }
  std::map<std::string, int64_t> index_of;
  for (size_t i = 0; i < labels.size(); ++i) index_of[labels[i]] = static_cast<int64_t>(i);
  std::vector<v1::Instrument> instruments;
  for (size_t r = 1; r < rows.size(); ++r) {
    const CsvRow& row = rows[r];
    RETURN_IF_ERROR(CheckRowWidth(path, header, row));
    v1::Instrument instrument;
    ASSIGN_OR_RETURN(const int64_t issuer,
                     IssuerAt(path, row, *column["issuer"], index_of, market_path));
    ASSIGN_OR_RETURN(const v1::Instrument::Type type, TypeAt(path, row, *column["type"]));
    instrument.set_issuer(issuer);
    instrument.set_type(type);
    for (const char* name : {"strike", "expiry", "volatility"}) {
      ASSIGN_OR_RETURN(const std::optional<double> value,
                       OptionalNumberAt(path, row, column[name], name));
      if (!value.has_value()) {
        if (type != v1::Instrument::TYPE_STOCK && std::string(name) != "volatility") {
          return CellError(path, row, name, "empty, but a forward, call or put needs it");
        }
        continue;
      }
      if (std::string(name) == "strike") instrument.set_strike(*value);
      if (std::string(name) == "expiry") instrument.set_expiry(*value);
      if (std::string(name) == "volatility") instrument.set_volatility(*value);
    }
    instruments.push_back(std::move(instrument));
  }
  if (instruments.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": a header but no instruments"));
  }
  return instruments;
}

}  // namespace pricer
