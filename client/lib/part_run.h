// One column range of a Price call and what has arrived of it
// (PricerClient::PartRun): Run() calls until every column of the range, and
// the path matrices this part asks for (ST's issuers, a book's V), have
// arrived, asking a broken call's successor only for what is still missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/lib/column_ranges.h"
#include "client/lib/pricer_client.h"
#include "client/lib/reply_decoding.h"
#include "client/lib/shared_output.h"

namespace pricer {

class PricerClient::PartRun {
 public:
  // `range` unset: the request's own range, learned from its `accepted`.
  // `path_matrices`: this part asks for the terminal prices and instrument
  // values the request names (one part of a split request does).
  PartRun(v1::PriceRequest request, std::optional<ColumnRange> range, bool path_matrices,
          const ReceivedResults& received, const PricerClient& client, const OnReply& on_reply);

  grpc::Status Run();

 private:
  // ST's issuers or V's instruments: whether this part asks for them, how
  // many there are (0 until `accepted`) and which have arrived.
  struct PathMatrix {
    bool wanted = false;
    int64_t count = 0;
    ColumnRanges have;
    bool Missing() const { return wanted && (count == 0 || !have.Covers(0, count)); }
  };
  using CutReply = ReceivedReply (*)(const ReceivedReply&, int64_t, int64_t);

  // Calls for each missing column range in turn; stops at the first call
  // that fails. `*ours`: the failure is our own (on_reply or a reply that
  // contradicts the request), not the server's or the network's.
  grpc::Status CallForMissing(bool* ours);
  // One call for columns `asked` (unset: the request as it is), with the
  // path matrices when `with_paths`.
  grpc::Status Call(const std::optional<ColumnRange>& asked, bool with_paths, bool* ours);
  grpc::Status Take(const ReceivedReply& reply, const std::optional<ColumnRange>& asked);
  // Take, for a reply whose chunk may be in `ring` (null: the call has none):
  // its values from there, and the slot released once handed on.
  grpc::Status Take(ReceivedReply& reply, SharedOutputReader* ring,
                    const std::optional<ColumnRange>& asked);
  // The values of a chunk in slot `slot` - 1 of `ring` into `reply`, checked.
  static grpc::Status FromRing(SharedOutputReader* ring, int32_t slot, ReceivedReply* reply);
  // A new ring for the next call when the client takes full output through
  // shared memory, named in request_ (else null, and request_ names none).
  absl::StatusOr<std::unique_ptr<SharedOutputReader>> NewRing();
  // Hands on the columns of a path-matrix chunk, [begin, end) of `matrix`,
  // that have not arrived yet (`what` names them in a contradiction).
  grpc::Status TakePathColumns(const ReceivedReply& received, int64_t begin, int64_t end,
                               int64_t rows, PathMatrix& matrix, CutReply cut, const char* what);
  // Hands on the part of `received`, of columns or issuers [begin, end),
  // that `have` lacks (cut out of it by `cut`: ChunkPart, PricesPart,
  // ValuesPart), and adds it to `have`.
  grpc::Status HandOnMissing(const ReceivedReply& received, int64_t begin, int64_t end,
                             CutReply cut, ColumnRanges& have);

  bool PathsMissing() const { return prices_.Missing() || values_.Missing(); }
  int64_t Arrived() const { return columns_.count() + prices_.have.count() + values_.have.count(); }
  std::vector<ColumnRange> MissingColumns(const ColumnRange& range) const {
    if (!columns_wanted_) return {};
    return columns_.Missing(range.first, range.second);
  }
  bool Complete() const {
    return range_.has_value() && MissingColumns(*range_).empty() && !PathsMissing();
  }
  // What a retry asks for, for the log.
  std::string Describe() const;

  v1::PriceRequest request_;
  std::optional<ColumnRange> range_;
  // False for a request of path matrices only: no chunk comes.
  const bool columns_wanted_;
  ColumnRanges columns_;
  // The columns the call in progress has sent (of its chunks, repeats or not).
  ColumnRanges call_columns_;
  PathMatrix prices_, values_;  // ST, V
  const PricerClient& client_;
  const OnReply& on_reply_;
};

}  // namespace pricer
