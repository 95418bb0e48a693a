// ReadMarketCsv (client/lib/market_csv.h) on arbitrary bytes.
#include <cstdlib>

#include "client/lib/market_csv.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static pricer::FuzzInputFile file("market-csv");
  absl::StatusOr<pricer::MarketCsv> csv = pricer::ReadMarketCsv(file.Write(data, size));
  if (!csv.ok()) return 0;
  // Accepted: a spot and a volatility per issuer, and a label each or none.
  const int issuers = csv->market.spot_size();
  if (csv->market.volatility_size() != issuers) std::abort();
  if (!csv->issuers.empty() && csv->issuers.size() != static_cast<size_t>(issuers)) std::abort();
  return 0;
}
