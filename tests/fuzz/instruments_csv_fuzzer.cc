// ReadInstrumentsCsv (client/lib/instruments_csv.h) on arbitrary bytes,
// against a market labelled ACME and B.
#include <cstdlib>

#include "client/lib/instruments_csv.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static pricer::FuzzInputFile file("instruments-csv");
  static const std::vector<std::string> kLabels = {"ACME", "B"};
  absl::StatusOr<std::vector<pricer::v1::Instrument>> book =
      pricer::ReadInstrumentsCsv(file.Write(data, size), kLabels, "market.csv");
  if (!book.ok()) return 0;
  // Accepted: at least one instrument, each on an issuer index from 0 and of
  // a known type; an option or forward with its strike and expiry.
  if (book->empty()) std::abort();
  for (const pricer::v1::Instrument& instrument : *book) {
    if (instrument.issuer() < 0 || !pricer::v1::Instrument::Type_IsValid(instrument.type())) {
      std::abort();
    }
  }
  return 0;
}
