#include "client/lib/pricer_client.h"

#include <grpcpp/client_context.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/lib/error_target.h"
#include "client/lib/reply_parts.h"
#include "client/lib/retry_policy.h"
#include "pricer/v1/client_protocol.pb.h"

namespace pricer {

namespace {

grpc::Status Contradiction(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INTERNAL, "the server sent " + what);
}

}  // namespace

// One column range of a request and what has arrived of it. Run() calls
// until every column of the range, and the terminal prices when this part
// asks for them, have arrived, asking a broken call's successor only for
// what is still missing.
class PricerClient::PartRun {
 public:
  // `range` unset: the request's own range, learned from its `accepted`.
  PartRun(v1::PriceRequest request, std::optional<ColumnRange> range, bool terminal_prices,
          const ReceivedResults& received, const PricerClient& client, const OnReply& on_reply)
      : request_(std::move(request)),
        range_(range),
        terminal_prices_(terminal_prices),
        columns_wanted_(request_.output().full() || request_.output().has_statistics() ||
                        !terminal_prices),
        columns_(received.columns),
        issuers_(received.issuers),
        prices_(received.prices),
        client_(client),
        on_reply_(on_reply) {}

  grpc::Status Run();

 private:
  // Calls for each missing column range in turn; stops at the first call
  // that fails. `*ours`: the failure is our own (on_reply or a reply that
  // contradicts the request), not the server's or the network's.
  grpc::Status CallForMissing(bool* ours);
  // One call for columns `asked` (unset: the request as it is).
  grpc::Status Call(const std::optional<ColumnRange>& asked, bool with_prices, bool* ours);
  grpc::Status Take(const ReceivedReply& reply, const std::optional<ColumnRange>& asked);
  grpc::Status TakePrices(const ReceivedReply& reply);
  // Hands on the part of `received`, of columns or issuers [begin, end),
  // that `have` lacks (cut out of it by `cut`: ChunkPart, PricesPart), and
  // adds it to `have`.
  using CutReply = ReceivedReply (*)(const ReceivedReply&, int64_t, int64_t);
  grpc::Status HandOnMissing(const ReceivedReply& received, int64_t begin, int64_t end,
                             CutReply cut, ColumnRanges& have);

  bool PricesMissing() const {
    return terminal_prices_ && (issuers_ == 0 || !prices_.Covers(0, issuers_));
  }
  std::vector<ColumnRange> MissingColumns(const ColumnRange& range) const {
    if (!columns_wanted_) return {};
    return columns_.Missing(range.first, range.second);
  }
  bool Complete() const {
    return range_.has_value() && MissingColumns(*range_).empty() && !PricesMissing();
  }
  // What a retry asks for, for the log.
  std::string Describe() const {
    if (!range_.has_value()) return "the call";
    int64_t missing = 0;
    for (const auto& [begin, end] : MissingColumns(*range_)) {
      missing += end - begin;
    }
    return absl::StrCat("columns [", range_->first, ", ", range_->second, ") (", missing,
                        " missing)");
  }

  v1::PriceRequest request_;
  std::optional<ColumnRange> range_;
  const bool terminal_prices_;
  // False for a request of terminal prices only: no chunk comes.
  const bool columns_wanted_;
  ColumnRanges columns_;
  // The columns the call in progress has sent (of its chunks, repeats or not).
  ColumnRanges call_columns_;
  int64_t issuers_ = 0;
  ColumnRanges prices_;
  const PricerClient& client_;
  const OnReply& on_reply_;
};

grpc::Status PricerClient::PartRun::Run() {
  const v1::RetryPolicy& policy = v1::RetryPolicy::default_instance();
  const std::chrono::milliseconds first_backoff(policy.first_backoff_ms());
  int retries = 0;
  std::chrono::milliseconds backoff = first_backoff;
  for (;;) {
    const int64_t before = columns_.count() + prices_.count();
    bool ours = false;
    const grpc::Status status = CallForMissing(&ours);
    if (status.ok() || ours || !Retryable(status.error_code())) return status;
    if (Complete()) return grpc::Status::OK;  // it broke after the last column
    // A call that brought something new restarts the count, so a long job
    // survives several outages, while one that cannot progress stops.
    if (columns_.count() + prices_.count() > before) {
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
  if (!range_.has_value()) return Call(std::nullopt, terminal_prices_, ours);
  bool with_prices = PricesMissing();
  std::vector<ColumnRange> missing = MissingColumns(*range_);
  // Only the terminal prices are missing: one column carries them (and
  // its chunk, already here, is dropped).
  if (missing.empty() && with_prices) missing.emplace_back(range_->first, range_->first + 1);
  // A targeted call sends the columns that meet the target first, so what a
  // broken one leaves is scattered: one call over the span of the gaps (its
  // columns that are here already are dropped), not one call per gap.
  if (missing.size() > 1 && Targeted(request_.target())) {
    missing = {{missing.front().first, missing.back().second}};
  }
  for (const ColumnRange& asked : missing) {
    if (grpc::Status s = Call(asked, with_prices, ours); !s.ok()) return s;
    with_prices = false;
  }
  return grpc::Status::OK;
}

grpc::Status PricerClient::PartRun::Call(const std::optional<ColumnRange>& asked, bool with_prices,
                                         bool* ours) {
  if (asked.has_value()) {
    request_.set_column_begin(asked->first);
    request_.set_column_end(asked->second);
  }
  request_.mutable_output()->set_terminal_prices(with_prices);
  call_columns_ = ColumnRanges();
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
    if (DecodeReply(buffer, &reply).ok()) s = Take(reply, asked);
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
  if (with_prices && PricesMissing()) {
    *ours = true;
    return Contradiction("a finished call without all the terminal prices");
  }
  return status;
}

grpc::Status PricerClient::PartRun::Take(const ReceivedReply& received,
                                         const std::optional<ColumnRange>& asked) {
  const v1::PriceReply& reply = received.message;
  if (reply.has_accepted()) {
    const v1::JobAccepted& accepted = reply.accepted();
    if (!range_.has_value()) range_.emplace(accepted.column_begin(), accepted.column_end());
    if (issuers_ == 0) issuers_ = accepted.issuers();
    return on_reply_(received);
  }
  if (reply.has_prices()) return TakePrices(received);
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

// Hands on the issuers of a terminal-prices chunk that have not arrived yet:
// a retry that asks for the prices again gets all of them.
grpc::Status PricerClient::PartRun::TakePrices(const ReceivedReply& received) {
  const v1::TerminalPricesChunk& chunk = received.message.prices();
  const int64_t begin = chunk.issuer_begin(), end = chunk.issuer_end();
  const int64_t column_bytes = chunk.rows() * 4;
  if (issuers_ == 0 || begin < 0 || begin >= end || end > issuers_ ||
      received.values.size() != column_bytes * (end - begin)) {
    return Contradiction(absl::StrCat("a terminal-prices chunk of issuers [", begin, ", ", end,
                                      ") that does not fit"));
  }
  return HandOnMissing(received, begin, end, PricesPart, prices_);
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

PricerClient::PricerClient(const std::string& target, const ConnectionOptions& options)
    : token_(options.token) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = CreateChannel(target, options);
  if (!channel.ok()) {
    connection_ = channel.status();
    return;
  }
  channel_ = *std::move(channel);
  stub_ = v1::Pricer::NewStub(channel_);
  static const std::string* const price_method =
      new std::string(absl::StrCat("/", v1::Pricer::service_full_name(), "/Price"));
  raw_price_ = std::make_unique<grpc::internal::RpcMethod>(
      price_method->c_str(), grpc::internal::RpcMethod::SERVER_STREAMING, channel_);
  health_ = grpc::health::v1::Health::NewStub(channel_);
}

grpc::Status PricerClient::Start(grpc::ClientContext& context) const {
  if (!connection_.ok()) {
    // gRPC's and Abseil's status codes share their numbers.
    return grpc::Status(static_cast<grpc::StatusCode>(connection_.code()),
                        std::string(connection_.message()));
  }
  AddToken(token_, context);
  if (deadline_.has_value()) context.set_deadline(*deadline_);
  return grpc::Status::OK;
}

grpc::Status PricerClient::Price(const v1::PriceRequest& request, const OnReply& on_reply) {
  std::optional<ColumnRange> range;
  if (request.column_end() > 0) range.emplace(request.column_begin(), request.column_end());
  return PartRun(request, range, request.output().terminal_prices(), {}, *this, on_reply).Run();
}

void PricerClient::ConnectToEveryServer(int parts) {
  using Clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  const v1::SplitWarmUp& warm_up = v1::SplitWarmUp::default_instance();
  // Without a connection there is no channel: the parts will fail at once.
  channel_->WaitForConnected(
      std::min(std::chrono::system_clock::now() + milliseconds(warm_up.connect_timeout_ms()),
               deadline_.value_or(std::chrono::system_clock::time_point::max())));
  std::set<std::string> servers;
  const Clock::time_point start = Clock::now();
  Clock::time_point last_new = start;
  for (int quiet = 0; Clock::now() - start < milliseconds(warm_up.max_wait_ms()); ++quiet) {
    v1::ListDevicesReply reply;
    if (!ListDevices(&reply).ok()) return;
    if (servers.insert(reply.server_id()).second) {
      quiet = 0;
      last_new = Clock::now();
    }
    const int servers_seen = static_cast<int>(servers.size());
    if (quiet < std::max(parts, warm_up.quiet_calls_per_server() * servers_seen)) continue;
    if (Clock::now() - last_new >= milliseconds(warm_up.quiet_ms())) return;
    std::this_thread::sleep_for(milliseconds(warm_up.poll_interval_ms()));
  }
}

grpc::Status PricerClient::PriceSplit(const v1::PriceRequest& request, int64_t column_begin,
                                      int64_t column_end, int parts, const OnReply& on_reply,
                                      const ReceivedResults& received) {
  const int64_t columns = column_end - column_begin;
  parts = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(parts, columns)));
  if (connection_.ok() && parts > 1 && !received.columns.Covers(column_begin, column_end)) {
    ConnectToEveryServer(parts);
  }
  std::vector<grpc::Status> statuses(static_cast<size_t>(parts));
  std::vector<std::thread> calls;
  for (int k = 0; k < parts; ++k) {
    const ColumnRange range(column_begin + columns * k / parts,
                            column_begin + columns * (k + 1) / parts);
    // Every part computes the same ST; the first sends it.
    const bool terminal_prices = request.output().terminal_prices() && k == 0;
    calls.emplace_back(
        [this, &request, range, terminal_prices, &received, &on_reply, &statuses, k] {
          statuses[static_cast<size_t>(k)] =
              PartRun(request, range, terminal_prices, received, *this, on_reply).Run();
        });
  }
  for (std::thread& call : calls) call.join();
  for (const grpc::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return grpc::Status::OK;
}

grpc::Status PricerClient::UploadScenarios(int64_t rows, int64_t columns,
                                           const std::vector<float>& values, v1::ScenarioSet* set,
                                           int64_t chunk_bytes) {
  grpc::ClientContext context;
  if (grpc::Status s = Start(context); !s.ok()) return s;
  std::unique_ptr<grpc::ClientWriter<v1::ScenarioChunk>> writer =
      stub_->UploadScenarios(&context, set);
  const auto* bytes = reinterpret_cast<const char*>(values.data());
  const int64_t total = static_cast<int64_t>(values.size() * sizeof(float));
  chunk_bytes = std::max<int64_t>(chunk_bytes, 1);
  int64_t sent = 0;
  do {
    v1::ScenarioChunk chunk;
    if (sent == 0) {
      chunk.set_rows(rows);
      chunk.set_columns(columns);
    }
    const int64_t size = std::min(chunk_bytes, total - sent);
    chunk.set_values(bytes + sent, static_cast<size_t>(size));
    sent += size;
    if (!writer->Write(chunk)) break;  // the server refused; Finish says why
  } while (sent < total);
  writer->WritesDone();
  return writer->Finish();
}

grpc::Status PricerClient::ListDevices(v1::ListDevicesReply* reply) {
  grpc::ClientContext context;
  if (grpc::Status s = Start(context); !s.ok()) return s;
  return stub_->ListDevices(&context, v1::ListDevicesRequest(), reply);
}

grpc::Status PricerClient::Health(const std::string& service,
                                  grpc::health::v1::HealthCheckResponse::ServingStatus* status) {
  grpc::ClientContext context;
  if (grpc::Status s = Start(context); !s.ok()) return s;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status s = health_->Check(&context, request, &response);
  if (s.ok()) *status = response.status();
  return s;
}

}  // namespace pricer
