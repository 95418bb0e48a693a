// What `pricer price` does with the replies of one call: writes the full SC
// matrix and the terminal prices to .npy as chunks arrive (memory stays
// bounded), keeps the per-column statistics for the CSV and the summary.
// Thread-safe: the parts of a split request hand their replies in
// concurrently.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "client/lib/contribution_files.h"
#include "client/lib/npy.h"
#include "client/lib/reply_decoding.h"
#include "client/lib/statistics_list.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

struct ResultFiles {
  std::string stats_csv;                        // --stats-out; empty: none
  std::string full_npy;                         // --full-out
  std::string prices_npy;                       // --prices-out
  std::string values_npy;                       // --values-out: a book's V
  std::vector<ContributionFile> contributions;  // --contributions-out

  // Every path above, empty ones included, in this order (the journal's).
  std::vector<std::string> All() const;
};

// What one run has done, for its summary (run_report.h).
struct RunTotals {
  int64_t column_begin = 0;  // the whole range of the request
  int64_t column_end = 0;
  int64_t columns_priced = 0;        // by this run's calls
  int64_t columns_from_journal = 0;  // by the interrupted run that --resume continues
  int64_t paths = 0;
  int64_t issuers = 0;
  int64_t instruments = 0;  // of a book: A's rows (else 0, and A's rows are the issuers)
  // The server's: the longest part's wall time, and the device
  // thread-seconds of the parts that finished.
  double server_seconds = 0;
  double gemm_seconds = 0;
  double statistics_seconds = 0;
  // The paths of the columns this run priced, summed over them, every round
  // a column went through counted (P + 2P + 4P for one priced with 4P).
  int64_t path_columns = 0;
  // With a precision target (else `target` is empty): the target
  // (DescribeTarget), the columns that met it and the columns priced with
  // each path count (those from the journal included), and the latest
  // round started (-1: none).
  std::string target;
  int64_t columns_met = 0;
  std::map<int64_t, int64_t> columns_by_paths;
  int round = -1;
  int64_t round_paths = 0;
};

// Where a run stands, for its progress line: what totals() says of it,
// read in O(1) (totals() goes over every column).
struct RunProgress {
  int64_t columns = 0;         // of the whole range
  int64_t columns_done = 0;    // priced by this run or from the journal
  int64_t columns_priced = 0;  // by this run's calls
  int round = -1;              // the latest round started (-1: none)
  int64_t round_paths = 0;
};

class PriceResults {
 public:
  // `statistics`: the items asked for, in the order of the CSV's columns
  // (with errors, WithErrors of them); `target`: the request's
  // (PriceRequest.target), whose chunks may have more rows than `accepted`
  // has paths and carry target_met, which the CSV ends with (columns paths
  // and target_met).
  PriceResults(ResultFiles files, std::vector<StatisticItem> statistics,
               v1::PrecisionTarget target = {})
      : files_(std::move(files)),
        items_(std::move(statistics)),
        target_(std::move(target)),
        contributions_(files_.contributions) {}

  // The whole column range of the request, which the files and arrays then
  // cover: the first `accepted` may be of a part only (a split request, a
  // retried or resumed one). Call before the first reply.
  void ExpectColumns(int64_t column_begin, int64_t column_end) ABSL_LOCKS_EXCLUDED(mu_);
  // The .npy files exist from an interrupted run of the same request: open
  // them in place, checking their shape, instead of creating them. Call
  // before the first reply.
  void ReopenFiles() ABSL_LOCKS_EXCLUDED(mu_);

  // Takes one reply, from any of the calls (thread-safe); a non-OK status
  // should cancel the call: INTERNAL for a reply that contradicts the plan,
  // CANCELLED for a file that cannot be written (file_error() says which).
  grpc::Status OnReply(const ReceivedReply& reply) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes a reply recorded by an interrupted run (progress_journal.h): its
  // values are in the files already; its statistics and columns count.
  grpc::Status Restore(const v1::PriceReply& reply) ABSL_LOCKS_EXCLUDED(mu_);
  // Closes the .npy files and writes the statistics CSV.
  absl::Status Finish() ABSL_LOCKS_EXCLUDED(mu_);
  // The first output file that could not be created or written while
  // replies arrived; OK if none.
  absl::Status file_error() const ABSL_LOCKS_EXCLUDED(mu_);

  // The `accepted` of the whole column range.
  v1::JobAccepted accepted() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t columns_received() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t columns() const ABSL_LOCKS_EXCLUDED(mu_);

  RunTotals totals() const ABSL_LOCKS_EXCLUDED(mu_);
  RunProgress progress() const ABSL_LOCKS_EXCLUDED(mu_);
  // A few lines: the statistics of the first columns and their average
  // over all columns; empty without statistics.
  std::string StatisticsTable() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  int64_t ColumnsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return accepted_.column_end() - accepted_.column_begin();
  }
  grpc::Status OnAccepted(const v1::JobAccepted& accepted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Remembers a file's failure (the first) and stops the call.
  grpc::Status FileFailed(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `received`: the reply `chunk` came in (its values and contributions);
  // null for a chunk of Restore, whose arrays are in the files.
  grpc::Status OnChunk(const v1::ResultChunk& chunk, const ReceivedReply* received)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Columns [begin, end) of ST or V (of `columns`, `rows` each) into
  // `writer`, when it is open; `what` names the chunk in a contradiction.
  grpc::Status OnPathColumns(std::optional<NpyColumnWriter>& writer, int64_t begin, int64_t end,
                             int64_t columns, int64_t rows, const ValueBytes& values,
                             absl::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  grpc::Status OnRound(const v1::RoundStarted& round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A chunk's rows: the accepted paths, or with a target P * 2^k.
  grpc::Status CheckRows(const v1::ResultChunk& chunk) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps a chunk's statistics at column offset `begin`.
  grpc::Status KeepStatistics(const v1::ResultChunk& chunk, int64_t begin)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnFinished(const v1::JobFinished& part) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ResultFiles files_;
  const std::vector<StatisticItem> items_;
  const v1::PrecisionTarget target_;
  mutable absl::Mutex mu_;
  // The whole range of a split request.
  std::optional<std::pair<int64_t, int64_t>> expected_ ABSL_GUARDED_BY(mu_);
  bool reopen_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  v1::JobAccepted accepted_ ABSL_GUARDED_BY(mu_);  // of the whole range
  std::optional<v1::JobFinished> finished_ ABSL_GUARDED_BY(mu_);
  std::optional<NpyColumnWriter> full_ ABSL_GUARDED_BY(mu_);
  std::optional<NpyColumnWriter> prices_ ABSL_GUARDED_BY(mu_);
  std::optional<NpyColumnWriter> book_values_ ABSL_GUARDED_BY(mu_);  // V, --values-out
  ContributionFiles contributions_ ABSL_GUARDED_BY(mu_);
  // V0 and each item's values over the priced columns, in column order
  // (NaN where no chunk brought them).
  std::vector<double> v0_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<double>> values_ ABSL_GUARDED_BY(mu_);  // [item][column]
  // With a target: each column's paths (0 until it arrives) and target_met.
  std::vector<int64_t> paths_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> met_ ABSL_GUARDED_BY(mu_);
  int64_t path_columns_ ABSL_GUARDED_BY(mu_) = 0;               // RunTotals::path_columns
  std::optional<v1::RoundStarted> round_ ABSL_GUARDED_BY(mu_);  // the latest
  bool has_statistics_ ABSL_GUARDED_BY(mu_) = false;
  int64_t columns_received_ ABSL_GUARDED_BY(mu_) = 0;  // restored ones included
  int64_t columns_restored_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status file_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pricer
