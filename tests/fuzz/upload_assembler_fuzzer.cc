// UploadAssembler (server/service/upload_assembler.h) on a sequence of
// ScenarioChunk messages, as one UploadScenarios call can send them. The
// input is a series of records: a 2-byte little-endian length, then that
// many bytes of a serialized chunk (a record that does not parse is sent as
// an empty chunk; a short last record is cut to what is left).
#include <cstdlib>
#include <vector>

#include "server/service/upload_assembler.h"

namespace {

// Small bounds, so that the fuzzer reaches them: a set of at most 4 KiB,
// and 2 KiB of uploads in progress.
constexpr int64_t kMaxSetBytes = 4096;
constexpr int64_t kBudgetBytes = 2048;

std::vector<pricer::v1::ScenarioChunk> SplitChunks(const uint8_t* data, size_t size) {
  std::vector<pricer::v1::ScenarioChunk> chunks;
  size_t at = 0;
  while (at + 2 <= size) {
    const size_t length = std::min<size_t>(data[at] | (data[at + 1] << 8), size - at - 2);
    at += 2;
    pricer::v1::ScenarioChunk& chunk = chunks.emplace_back();
    if (!chunk.ParseFromArray(data + at, static_cast<int>(length))) chunk.Clear();
    at += length;
  }
  return chunks;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pricer::MemoryAccount budget(kBudgetBytes);
  {
    pricer::UploadAssembler assembler(kMaxSetBytes, budget);
    absl::Status status;
    for (const pricer::v1::ScenarioChunk& chunk : SplitChunks(data, size)) {
      status = assembler.Add(chunk);
      if (!status.ok()) break;
    }
    if (status.ok() && assembler.Complete().ok()) {
      const int64_t rows = assembler.rows(), columns = assembler.columns();
      const std::vector<float> values = assembler.TakeValues();
      // A complete set has its declared shape and fits the bounds.
      if (rows < 1 || columns < 1 || 4 * rows * columns > kMaxSetBytes ||
          values.size() != static_cast<size_t>(rows * columns) ||
          assembler.received() != 4 * rows * columns) {
        std::abort();
      }
    }
    if (budget.in_use() < 0 || budget.in_use() > kBudgetBytes) std::abort();
  }
  if (budget.in_use() != 0) std::abort();  // the assembler gave its reservation back
  return 0;
}
