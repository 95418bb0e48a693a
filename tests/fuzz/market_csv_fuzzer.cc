// ReadMarketCsv (client/lib/request_options.h) on arbitrary bytes.
#include <cstdlib>

#include "client/lib/request_options.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static pricer::FuzzInputFile file("market-csv");
  absl::StatusOr<pricer::v1::ExplicitMarket> market = pricer::ReadMarketCsv(file.Write(data, size));
  if (market.ok() && market->spot_size() != market->volatility_size()) std::abort();
  return 0;
}
