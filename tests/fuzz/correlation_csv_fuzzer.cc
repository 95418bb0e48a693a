// ReadCorrelationCsv and CorrelationInIssuerOrder (client/lib/market_csv.h)
// on arbitrary bytes.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "client/lib/market_csv.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static pricer::FuzzInputFile file("correlation-csv");
  absl::StatusOr<pricer::CorrelationCsv> csv = pricer::ReadCorrelationCsv(file.Write(data, size));
  if (!csv.ok()) return 0;
  // Accepted: N x N, and N labels or none.
  const size_t n = static_cast<size_t>(std::llround(std::sqrt(csv->values.size())));
  if (csv->values.empty() || n * n != csv->values.size()) std::abort();
  if (!csv->labels.empty() && csv->labels.size() != n) std::abort();
  // The labels in reverse order: a permutation of the same matrix.
  const std::vector<std::string> reversed(csv->labels.rbegin(), csv->labels.rend());
  absl::StatusOr<std::vector<double>> ordered =
      pricer::CorrelationInIssuerOrder(*csv, reversed, "correlation", "market");
  if (!ordered.ok() || ordered->size() != n * n) std::abort();
  if (!reversed.empty() && !std::isnan(ordered->front()) &&
      ordered->front() != csv->values.back()) {
    std::abort();
  }
  return 0;
}
