#include "client/lib/pricer_client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <algorithm>

namespace pricer {

PricerClient::PricerClient(const std::string& target)
    : stub_(v1::Pricer::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()))) {}

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
