// What `pricer price` does with the replies of one call: writes the full SC
// matrix and the terminal prices to .npy as chunks arrive (memory stays
// bounded), keeps the per-column statistics for the CSV and the summary.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "client/lib/npy.h"
#include "client/lib/statistics_list.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

struct ResultFiles {
  std::string stats_csv;   // --stats-out; empty: none
  std::string full_npy;    // --full-out
  std::string prices_npy;  // --prices-out
};

class PriceResults {
 public:
  // `statistics`: the items asked for, in the order of the CSV's columns.
  PriceResults(ResultFiles files, std::vector<StatisticItem> statistics)
      : files_(std::move(files)), items_(std::move(statistics)) {}

  // The whole column range of the request, which the files and arrays then
  // cover: the first `accepted` may be of a part only (a split request, a
  // retried or resumed one). Call before the first reply.
  void ExpectColumns(int64_t column_begin, int64_t column_end);
  // The .npy files exist from an interrupted run of the same request: open
  // them in place, checking their shape, instead of creating them. Call
  // before the first reply.
  void ReopenFiles() { reopen_ = true; }

  // Takes one reply, from any of the calls (thread-safe); a non-OK status (a
  // file that cannot be written, a reply that contradicts the plan) should
  // cancel the call.
  grpc::Status OnReply(const v1::PriceReply& reply);
  // Takes a reply recorded by an interrupted run (progress_journal.h): its
  // values are in the files already; its statistics and columns count.
  grpc::Status Restore(const v1::PriceReply& reply);
  // Closes the .npy files and writes the statistics CSV.
  absl::Status Finish();

  const v1::JobAccepted& accepted() const { return accepted_; }
  const std::optional<v1::JobFinished>& finished() const { return finished_; }
  int64_t columns_received() const { return columns_received_; }
  int64_t columns() const { return accepted_.column_end() - accepted_.column_begin(); }
  // V0 and each item's values over the priced columns, in column order
  // (NaN where no chunk brought them).
  const std::vector<double>& v0() const { return v0_; }
  const std::vector<double>& values(size_t item) const { return values_[item]; }

  // A few lines: the statistics of the first columns, their spread across
  // all columns, and the time and GFLOP/s of the job.
  std::string Summary(double wall_seconds) const;

 private:
  grpc::Status OnAccepted(const v1::JobAccepted& accepted);
  // `restored`: a chunk of Restore, whose values are in the file.
  grpc::Status OnChunk(const v1::ResultChunk& chunk, bool restored);
  grpc::Status OnPrices(const v1::TerminalPricesChunk& chunk);

  const ResultFiles files_;
  std::mutex mu_;
  std::optional<std::pair<int64_t, int64_t>> expected_;  // the whole range of a split
  bool reopen_ = false;
  bool started_ = false;
  v1::JobAccepted accepted_;  // of the whole range
  std::optional<v1::JobFinished> finished_;
  std::optional<NpyColumnWriter> full_;
  std::optional<NpyColumnWriter> prices_;
  const std::vector<StatisticItem> items_;
  std::vector<double> v0_;
  std::vector<std::vector<double>> values_;  // [item][column]
  bool has_statistics_ = false;
  int64_t columns_received_ = 0;
};

}  // namespace pricer
