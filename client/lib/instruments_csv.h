// The book of `pricer price --instruments-file` (PriceRequest.instruments):
// a CSV file with a header naming `issuer`, `type`, `strike`, `expiry` and
// optionally `volatility`, in any order among other columns (ignored, as is
// pandas' unnamed index column), then one instrument a row, read with the
// CSV rules of the market file (csv_table.h):
//
//   issuer,type,strike,expiry,volatility     ,issuer,type,strike,expiry
//   ACME,call,105,1.5,                       0,0,put,95,1.0
//   ACME,stock,,,                            1,2,forward,40,2.0
//
// `issuer` is a label of the market file's issuers or an index from 0;
// `type` one of stock, forward, call, put (any case); `strike` and
// `expiry` (years from today) may be empty for a stock; an empty
// `volatility` (or none) is the issuer's. The server checks the ranges.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

// `labels`: the market file's issuer labels (MarketCsv::issuers), empty when
// it has none; `market_path` names it in errors. Errors name the file, the
// line and the column.
absl::StatusOr<std::vector<v1::Instrument>> ReadInstrumentsCsv(
    const std::string& path, const std::vector<std::string>& labels,
    const std::string& market_path);

}  // namespace pricer
