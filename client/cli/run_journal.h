// The journal of one `pricer price` run (client/lib/progress_journal.h), so
// that a run killed midway continues with --resume.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "client/lib/price_results.h"
#include "client/lib/pricer_client.h"
#include "client/lib/progress_journal.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

// It lives next to the run's first output file that is a regular file; a
// run without one has none (nothing to resume into /dev/null). It starts
// once the first `accepted` has created the files, takes each reply after
// its values are in them, and goes when the run succeeds.
class RunJournal {
 public:
  RunJournal(const v1::PriceRequest& request, const ResultFiles& files);

  const std::string& path() const { return path_; }
  bool exists() const;
  // Whether a failed run leaves something to resume.
  bool kept() const { return journal_.has_value(); }

  // Reads the journal of an interrupted run back: the files reopen in place,
  // the statistics and columns recorded go into `results` and `received`,
  // and the run's whole column range into [*begin, *end).
  absl::Status Resume(PriceResults& results, ReceivedResults& received, int64_t* begin,
                      int64_t* end);
  // Records `reply`, which `results` has taken. Not thread-safe.
  absl::Status Record(const v1::PriceReply& reply, const PriceResults& results);
  // Deletes the journal: the run is complete.
  absl::Status Remove();

 private:
  std::string path_;
  const std::string fingerprint_;
  std::optional<ProgressJournal> journal_;
  bool started_ = false;  // the journal holds the `accepted` of the whole range
};

}  // namespace pricer
