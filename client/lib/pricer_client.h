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
  // `target` is a gRPC target such as "localhost:50051", or several servers:
  // "ipv4:127.0.0.1:50051,127.0.0.1:50052" (calls go round robin).
  explicit PricerClient(const std::string& target);

  // Sends one request and hands each reply to `on_reply` as it arrives. A
  // non-OK status returned by `on_reply` cancels the call and is returned;
  // otherwise the call's own status is.
  grpc::Status Price(const v1::PriceRequest& request,
                     const std::function<grpc::Status(const v1::PriceReply&)>& on_reply);
  // The same request cut into `parts` contiguous column ranges of
  // [column_begin, column_end), priced concurrently (over several servers
  // when the target names several); `on_reply` must be thread-safe. Results
  // do not depend on the split: every column is computed the same way.
  grpc::Status PriceSplit(const v1::PriceRequest& request, int64_t column_begin, int64_t column_end,
                          int parts,
                          const std::function<grpc::Status(const v1::PriceReply&)>& on_reply);
  grpc::Status ListDevices(v1::ListDevicesReply* reply);
  // Uploads a rows x columns column-major float32 matrix in chunks of
  // `chunk_bytes`; `set` receives its id and shape.
  grpc::Status UploadScenarios(int64_t rows, int64_t columns, const std::vector<float>& values,
                               v1::ScenarioSet* set, int64_t chunk_bytes = 1 << 20);

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Pricer::Stub> stub_;
};

}  // namespace pricer
