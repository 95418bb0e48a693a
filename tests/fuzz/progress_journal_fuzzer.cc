// ProgressJournal::Resume (client/lib/progress_journal.h) on arbitrary bytes:
// a journal left by a killed run may be torn anywhere, or not be a journal.
#include "client/lib/progress_journal.h"
#include "tests/fuzz/fuzz_input_file.h"

// The fingerprint the seed corpus's journals carry (tests/fuzz/make_corpus.py).
constexpr char kFingerprint[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static pricer::FuzzInputFile file("journal");
  std::vector<pricer::v1::PriceReply> records;
  absl::StatusOr<pricer::ProgressJournal> journal =
      pricer::ProgressJournal::Resume(file.Write(data, size), kFingerprint, &records);
  if (journal.ok()) {
    // Appending after the kept records is what a resumed run does next.
    pricer::v1::PriceReply reply;
    reply.mutable_chunk()->set_column_begin(static_cast<int64_t>(records.size()));
    (void)journal->Append(reply);
  }
  return 0;
}
