#include "client/lib/part_run.h"

#include <grpcpp/client_context.h>

#include <chrono>
#include <iostream>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/lib/error_target.h"
#include "client/lib/reply_parts.h"
#include "client/lib/retry_policy.h"
#include "client/lib/shared_output.h"
#include "common/status_macros.h"
#include "pricer/v1/client_protocol.pb.h"

namespace pricer {
namespace {

grpc::Status Contradiction(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INTERNAL, "the server sent " + what);
}

}  // namespace

PricerClient::PartRun::PartRun(v1::PriceRequest request, std::optional<ColumnRange> range,
                               bool path_matrices, const ReceivedResults& received,
                               const PricerClient& client, const OnReply& on_reply)
    : request_(std::move(request)),
      range_(range),
      columns_wanted_(
          request_.output().full() || request_.output().has_statistics() || !path_matrices ||
          !(request_.output().terminal_prices() || request_.output().instrument_values())),
      columns_(received.columns),
      prices_{path_matrices && request_.output().terminal_prices(), received.issuers,
              received.prices},
      values_{path_matrices && request_.output().instrument_values(), received.instruments,
              received.values},
      client_(client),
      on_reply_(on_reply) {}

std::string PricerClient::PartRun::Describe() const {
  if (!range_.has_value()) return "the call";
  int64_t missing = 0;
  for (const auto& [begin, end] : MissingColumns(*range_)) missing += end - begin;
  return absl::StrCat("columns [", range_->first, ", ", range_->second, ") (", missing,
                      " missing)");
}

grpc::Status PricerClient::PartRun::Run() {
  const v1::RetryPolicy& policy = v1::RetryPolicy::default_instance();
  const std::chrono::milliseconds first_backoff(policy.first_backoff_ms());
  int retries = 0;
  std::chrono::milliseconds backoff = first_backoff;
  for (;;) {
    const int64_t before = Arrived();
    bool ours = false;
    const grpc::Status status = CallForMissing(&ours);
    if (status.ok() || ours || !Retryable(status.error_code())) return status;
    if (Complete()) return grpc::Status::OK;  // it broke after the last column
    // A call that brought something new restarts the count, so a long job
    // survives several outages, while one that cannot progress stops.
    if (Arrived() > before) {
      retries = 0;
      backoff = first_backoff;
    }
    if (retries == policy.max_retries_without_progress()) return status;
    ++retries;
    const int code = static_cast<int>(status.error_code());
    const std::string broke = absl::StrFormat(
        "%s broke with %d %s: %s", Describe(), code,
        absl::StatusCodeToString(static_cast<absl::StatusCode>(code)), status.error_message());
    const auto deadline = client_.deadline_.value_or(std::chrono::system_clock::time_point::max());
    if (deadline - std::chrono::system_clock::now() <= backoff) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          absl::StrCat("the deadline comes before the retry: ", broke));
    }
    std::cerr << absl::StrFormat("pricer: %s; retry %d of %d in %.1f s\n", broke, retries,
                                 policy.max_retries_without_progress(),
                                 std::chrono::duration<double>(backoff).count());
    std::this_thread::sleep_for(backoff);
    backoff *= policy.backoff_multiplier();
  }
}

grpc::Status PricerClient::PartRun::CallForMissing(bool* ours) {
  if (!range_.has_value()) return Call(std::nullopt, prices_.wanted || values_.wanted, ours);
  bool with_paths = PathsMissing();
  std::vector<ColumnRange> missing = MissingColumns(*range_);
  // Only path matrices are missing: one column carries them (and its
  // chunk, already here, is dropped).
  if (missing.empty() && with_paths) missing.emplace_back(range_->first, range_->first + 1);
  // A targeted call sends the columns that meet the target first, so what a
  // broken one leaves is scattered: one call over the span of the gaps (its
  // columns that are here already are dropped), not one call per gap.
  if (missing.size() > 1 && Targeted(request_.target())) {
    missing = {{missing.front().first, missing.back().second}};
  }
  for (const ColumnRange& asked : missing) {
    if (grpc::Status s = Call(asked, with_paths, ours); !s.ok()) return s;
    with_paths = false;
  }
  return grpc::Status::OK;
}

grpc::Status PricerClient::PartRun::Call(const std::optional<ColumnRange>& asked, bool with_paths,
                                         bool* ours) {
  if (asked.has_value()) {
    request_.set_column_begin(asked->first);
    request_.set_column_end(asked->second);
  }
  request_.mutable_output()->set_terminal_prices(with_paths && prices_.wanted);
  request_.mutable_output()->set_instrument_values(with_paths && values_.wanted);
  call_columns_ = ColumnRanges();
  absl::StatusOr<std::unique_ptr<SharedOutputReader>> ring = NewRing();
  if (!ring.ok()) {
    *ours = true;
    return ToGrpcStatus(ring.status());
  }
  grpc::ClientContext context;
  if (grpc::Status s = client_.Start(context); !s.ok()) return s;
  // The stub's Price, reading each reply as the bytes gRPC received.
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
          client_.channel_.get(), *client_.raw_price_, &context, request_));
  grpc::ByteBuffer buffer;
  while (reader->Read(&buffer)) {
    ReceivedReply reply;
    grpc::Status s = Contradiction("a reply that is not a PriceReply");
    if (DecodeReply(buffer, &reply).ok()) s = Take(reply, ring->get(), asked);
    if (!s.ok()) {
      *ours = true;
      context.TryCancel();
      while (reader->Read(&buffer)) {
      }
      reader->Finish().IgnoreError();
      return s;
    }
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) return status;
  // The call says it is done: everything asked for must be here.
  if (!range_.has_value()) {
    *ours = true;
    return Contradiction("a finished call without an accepted reply");
  }
  const ColumnRange want = asked.value_or(*range_);
  const std::vector<ColumnRange> missing = MissingColumns(want);
  if (!missing.empty()) {
    *ours = true;
    return Contradiction(absl::StrCat("a finished call without columns [", missing.front().first,
                                      ", ", missing.front().second, ")"));
  }
  if (with_paths && PathsMissing()) {
    *ours = true;
    return Contradiction(prices_.Missing() ? "a finished call without all the terminal prices"
                                           : "a finished call without all the instrument values");
  }
  return status;
}

absl::StatusOr<std::unique_ptr<SharedOutputReader>> PricerClient::PartRun::NewRing() {
  request_.mutable_output()->clear_shared_memory();
  if (client_.shared_memory_slots_ == 0 || !request_.output().full()) return nullptr;
  ASSIGN_OR_RETURN(
      std::unique_ptr<SharedOutputReader> ring,
      SharedOutputReader::Create(client_.shared_memory_slots_, client_.shared_memory_phase_));
  *request_.mutable_output()->mutable_shared_memory() = ring->ring();
  return ring;
}

grpc::Status PricerClient::PartRun::Take(ReceivedReply& reply, SharedOutputReader* ring,
                                         const std::optional<ColumnRange>& asked) {
  const int32_t slot = reply.message.has_chunk() ? reply.message.chunk().shared_slot() : 0;
  if (slot == 0) return Take(reply, asked);
  grpc::Status s = FromRing(ring, slot, &reply);
  if (s.ok()) s = Take(reply, asked);
  if (s.ok()) ring->Release();
  return s;
}

grpc::Status PricerClient::PartRun::FromRing(SharedOutputReader* ring, int32_t slot,
                                             ReceivedReply* reply) {
  if (ring == nullptr) return Contradiction("a chunk in a shared-memory ring not asked for");
  const v1::ResultChunk& chunk = reply->message.chunk();
  if (!reply->values.empty()) return Contradiction("a chunk with values in two places");
  absl::StatusOr<ValueBytes> values = ring->Take(slot, chunk.rows(), chunk.column_begin(),
                                                 chunk.column_end() - chunk.column_begin());
  if (!values.ok()) return Contradiction(std::string(values.status().message()));
  reply->values = *std::move(values);
  return grpc::Status::OK;
}

grpc::Status PricerClient::PartRun::Take(const ReceivedReply& received,
                                         const std::optional<ColumnRange>& asked) {
  const v1::PriceReply& reply = received.message;
  if (reply.has_accepted()) {
    const v1::JobAccepted& accepted = reply.accepted();
    if (!range_.has_value()) range_.emplace(accepted.column_begin(), accepted.column_end());
    if (prices_.count == 0) prices_.count = accepted.issuers();
    if (values_.count == 0) values_.count = accepted.instruments();
    return on_reply_(received);
  }
  if (reply.has_prices()) {
    const v1::TerminalPricesChunk& p = reply.prices();
    return TakePathColumns(received, p.issuer_begin(), p.issuer_end(), p.rows(), prices_,
                           PricesPart, "a terminal-prices chunk of issuers");
  }
  if (reply.has_values()) {
    const v1::InstrumentValuesChunk& v = reply.values();
    return TakePathColumns(received, v.instrument_begin(), v.instrument_end(), v.rows(), values_,
                           ValuesPart, "an instrument-values chunk of instruments");
  }
  if (!reply.has_chunk()) return on_reply_(received);  // finished
  const int64_t begin = reply.chunk().column_begin(), end = reply.chunk().column_end();
  const std::optional<ColumnRange> want = asked.has_value() ? asked : range_;
  if (!want.has_value() || begin < want->first || end > want->second || begin >= end) {
    return Contradiction(
        absl::StrCat("a chunk of columns [", begin, ", ", end, ") outside the columns asked for"));
  }
  // A call sends each column once. What an earlier call sent too (the
  // chunk of a call that only carries the prices, a targeted retry over the
  // span of the gaps) is dropped.
  if (call_columns_.Overlaps(begin, end)) {
    return Contradiction(absl::StrCat("columns of [", begin, ", ", end, ") twice"));
  }
  call_columns_.Add(begin, end);
  return HandOnMissing(received, begin, end, ChunkPart, columns_);
}

// Hands on the columns of a path-matrix chunk that have not arrived yet: a
// retry that asks for the path matrices again gets all of them.
grpc::Status PricerClient::PartRun::TakePathColumns(const ReceivedReply& received, int64_t begin,
                                                    int64_t end, int64_t rows, PathMatrix& matrix,
                                                    CutReply cut, const char* what) {
  if (matrix.count == 0 || begin < 0 || begin >= end || end > matrix.count ||
      received.values.size() != rows * 4 * (end - begin)) {
    return Contradiction(absl::StrCat(what, " [", begin, ", ", end, ") that does not fit"));
  }
  return HandOnMissing(received, begin, end, cut, matrix.have);
}

grpc::Status PricerClient::PartRun::HandOnMissing(const ReceivedReply& received, int64_t begin,
                                                  int64_t end, CutReply cut, ColumnRanges& have) {
  for (const auto& [first, last] : have.Missing(begin, end)) {
    grpc::Status s =
        on_reply_(first == begin && last == end ? received : cut(received, first, last));
    if (!s.ok()) return s;
    have.Add(first, last);
  }
  return grpc::Status::OK;
}

}  // namespace pricer
