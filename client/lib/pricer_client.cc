#include "client/lib/pricer_client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace pricer {

namespace {

// Calls go round robin over every address the target resolves to (a list
// such as ipv4:127.0.0.1:50051,127.0.0.1:50052, or a DNS name with several
// records), so the parts of a split request spread over the servers.
std::shared_ptr<grpc::Channel> RoundRobinChannel(const std::string& target) {
  grpc::ChannelArguments arguments;
  arguments.SetLoadBalancingPolicyName("round_robin");
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), arguments);
}

}  // namespace

PricerClient::PricerClient(const std::string& target)
    : channel_(RoundRobinChannel(target)), stub_(v1::Pricer::NewStub(channel_)) {}

grpc::Status PricerClient::Price(
    const v1::PriceRequest& request,
    const std::function<grpc::Status(const v1::PriceReply&)>& on_reply) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::PriceReply>> reader = stub_->Price(&context, request);
  v1::PriceReply reply;
  while (reader->Read(&reply)) {
    if (grpc::Status s = on_reply(reply); !s.ok()) {
      context.TryCancel();
      while (reader->Read(&reply)) {
      }
      reader->Finish().IgnoreError();
      return s;
    }
  }
  return reader->Finish();
}

grpc::Status PricerClient::PriceSplit(
    const v1::PriceRequest& request, int64_t column_begin, int64_t column_end, int parts,
    const std::function<grpc::Status(const v1::PriceReply&)>& on_reply) {
  const int64_t columns = column_end - column_begin;
  parts = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(parts, columns)));
  // Round robin picks among the servers it is connected to: connect first,
  // so the parts do not all go to whichever server answered first. A few
  // cheap calls give the other connections time to come up.
  channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10));
  for (int k = 0; k < parts; ++k) {
    v1::ListDevicesReply ignored;
    ListDevices(&ignored).IgnoreError();
  }
  std::vector<grpc::Status> statuses(static_cast<size_t>(parts));
  std::vector<std::thread> calls;
  for (int k = 0; k < parts; ++k) {
    v1::PriceRequest part = request;
    part.set_column_begin(column_begin + columns * k / parts);
    part.set_column_end(column_begin + columns * (k + 1) / parts);
    // Every part computes the same ST; one sends it.
    if (k > 0) part.mutable_output()->set_terminal_prices(false);
    calls.emplace_back([this, part, &on_reply, &statuses, k] {
      statuses[static_cast<size_t>(k)] = Price(part, on_reply);
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
  return stub_->ListDevices(&context, v1::ListDevicesRequest(), reply);
}

}  // namespace pricer
