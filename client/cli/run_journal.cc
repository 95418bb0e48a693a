#include "client/cli/run_journal.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace pricer {

RunJournal::RunJournal(const v1::PriceRequest& request, const ResultFiles& files)
    : fingerprint_(ProgressJournal::Fingerprint(request, files.All())) {
  for (const std::string& file : files.All()) {
    // The error_code forms: a name too long is for CheckOutputFiles to
    // report, not an exception.
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::status(file, error);
    const bool sink = std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
    if (path_.empty() && !file.empty() && !sink) path_ = file + ".progress";
  }
}

bool RunJournal::exists() const {
  std::error_code error;
  return !path_.empty() && std::filesystem::exists(path_, error);
}

absl::Status RunJournal::Resume(PriceResults& results, ReceivedResults& received, int64_t* begin,
                                int64_t* end) {
  if (path_.empty()) {
    return absl::InvalidArgumentError(
        "--resume needs the output files of the interrupted run (--full-out, --stats-out, "
        "--prices-out, --values-out, --contributions-out)");
  }
  std::vector<v1::PriceReply> records;
  ASSIGN_OR_RETURN(ProgressJournal journal, ProgressJournal::Resume(path_, fingerprint_, &records));
  // Killed before the first record: nothing to keep, the journal starts over.
  if (records.empty() || !records.front().has_accepted()) return absl::OkStatus();
  journal_.emplace(std::move(journal));
  started_ = true;
  const v1::JobAccepted& accepted = records.front().accepted();
  *begin = accepted.column_begin();
  *end = accepted.column_end();
  received.issuers = accepted.issuers();
  received.instruments = accepted.instruments();
  results.ExpectColumns(*begin, *end);
  results.ReopenFiles();
  for (const v1::PriceReply& record : records) {
    if (grpc::Status s = results.Restore(record); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(path_, ": ", s.error_message()));
    }
    if (record.has_chunk()) {
      received.columns.Add(record.chunk().column_begin(), record.chunk().column_end());
    } else if (record.has_prices()) {
      received.prices.Add(record.prices().issuer_begin(), record.prices().issuer_end());
    } else if (record.has_values()) {
      received.values.Add(record.values().instrument_begin(), record.values().instrument_end());
    }
  }
  return absl::OkStatus();
}

absl::Status RunJournal::Record(const v1::PriceReply& reply, const PriceResults& results) {
  if (path_.empty()) return absl::OkStatus();
  if (!started_) {
    // The first `accepted`: the journal starts with the whole range, which
    // a resumed run reopens the files with.
    ASSIGN_OR_RETURN(ProgressJournal created, ProgressJournal::Create(path_, fingerprint_));
    journal_.emplace(std::move(created));
    started_ = true;
    v1::PriceReply whole;
    *whole.mutable_accepted() = results.accepted();
    RETURN_IF_ERROR(journal_->Append(whole));
  }
  if (!reply.has_chunk() && !reply.has_prices() && !reply.has_values()) return absl::OkStatus();
  return journal_->Append(reply);
}

absl::Status RunJournal::Remove() {
  if (!journal_.has_value()) return absl::OkStatus();
  absl::Status s = journal_->Remove();
  journal_.reset();
  return s;
}

}  // namespace pricer
