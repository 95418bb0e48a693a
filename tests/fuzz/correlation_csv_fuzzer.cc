// ReadCorrelationCsv (client/lib/request_options.h) on arbitrary bytes.
#include <cmath>
#include <cstdlib>

#include "client/lib/request_options.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static pricer::FuzzInputFile file("correlation-csv");
  absl::StatusOr<std::vector<double>> values = pricer::ReadCorrelationCsv(file.Write(data, size));
  if (values.ok()) {
    const size_t n = static_cast<size_t>(std::llround(std::sqrt(values->size())));
    if (values->empty() || n * n != values->size()) std::abort();  // accepted: N x N
  }
  return 0;
}
