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
#include "client/lib/part_run.h"
#include "client/lib/retry_policy.h"
#include "pricer/v1/client_protocol.pb.h"

namespace pricer {

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

grpc::Status PricerClient::ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::Status PricerClient::Start(grpc::ClientContext& context) const {
  if (!connection_.ok()) return ToGrpcStatus(connection_);
  AddToken(token_, context);
  if (deadline_.has_value()) context.set_deadline(*deadline_);
  return grpc::Status::OK;
}

grpc::Status PricerClient::Price(const v1::PriceRequest& request, const OnReply& on_reply) {
  std::optional<ColumnRange> range;
  if (request.column_end() > 0) range.emplace(request.column_begin(), request.column_end());
  return PartRun(request, range, /*path_matrices=*/true, {}, *this, on_reply).Run();
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
    // Every part computes the same ST (and V); the first sends them.
    const bool path_matrices = k == 0;
    calls.emplace_back([this, &request, range, path_matrices, &received, &on_reply, &statuses, k] {
      statuses[static_cast<size_t>(k)] =
          PartRun(request, range, path_matrices, received, *this, on_reply).Run();
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
