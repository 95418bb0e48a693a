// A thin C++ client of the Pricer service.
#pragma once

#include <grpcpp/channel.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pricer/v1/pricer.grpc.pb.h"

namespace pricer {

class PricerClient {
 public:
  // `target` is a gRPC target such as "localhost:50051".
  explicit PricerClient(const std::string& target);

  // Sends one request and hands each reply to `on_reply` as it arrives. A
  // non-OK status returned by `on_reply` cancels the call and is returned;
  // otherwise the call's own status is.
  grpc::Status Price(const v1::PriceRequest& request,
                     const std::function<grpc::Status(const v1::PriceReply&)>& on_reply);
  grpc::Status ListDevices(v1::ListDevicesReply* reply);
  // Uploads a rows x columns column-major float32 matrix in chunks of
  // `chunk_bytes`; `set` receives its id and shape.
  grpc::Status UploadScenarios(int64_t rows, int64_t columns, const std::vector<float>& values,
                               v1::ScenarioSet* set, int64_t chunk_bytes = 1 << 20);

 private:
  std::unique_ptr<v1::Pricer::Stub> stub_;
};

}  // namespace pricer
