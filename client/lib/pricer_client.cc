#include "client/lib/pricer_client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

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

grpc::Status PricerClient::ListDevices(v1::ListDevicesReply* reply) {
  grpc::ClientContext context;
  return stub_->ListDevices(&context, v1::ListDevicesRequest(), reply);
}

}  // namespace pricer
