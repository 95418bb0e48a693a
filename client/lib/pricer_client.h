// A thin C++ client of the Pricer service.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/impl/rpc_method.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/lib/column_ranges.h"
#include "client/lib/connection.h"
#include "client/lib/reply_decoding.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "pricer/v1/pricer.grpc.pb.h"

namespace pricer {

// What has already arrived of a request's results, so that only the rest is
// asked for (a run resumed from its journal).
struct ReceivedResults {
  ColumnRanges columns;     // of SC and the statistics
  int64_t issuers = 0;      // N, when known
  ColumnRanges prices;      // the issuers of ST received
  int64_t instruments = 0;  // K of a book, when known
  ColumnRanges values;      // the instruments of V received
};

// A call that breaks with UNAVAILABLE or ABORTED is asked again for the
// columns that have not arrived, up to 3 times in a row without progress,
// after 0.2 s, 0.4 s, 0.8 s (client_protocol.proto's RetryPolicy, shared with
// the Python client); round robin sends it to a server that is still up.
class PricerClient {
 public:
  // A reply's values (SC or terminal prices) are in ReceivedReply::values, as
  // gRPC received them: they are not copied out of its buffers.
  using OnReply = std::function<grpc::Status(const ReceivedReply&)>;

  // `target` is a gRPC target such as "localhost:50051", or several servers:
  // "ipv4:127.0.0.1:50051,127.0.0.1:50052" (calls go round robin); `options`
  // turn on TLS and give the token (connection.h). When they are wrong (a
  // PEM file that cannot be read), every call fails with the error that
  // CreateChannel returned, naming the flag and the path.
  explicit PricerClient(const std::string& target, const ConnectionOptions& options = {});

  // Sends one request and hands each reply to `on_reply` as it arrives,
  // retrying the missing columns of a broken call: `on_reply` then sees the
  // `accepted` of each retry (a sub-range) but never a column or an issuer of
  // the terminal prices twice. A non-OK status returned by `on_reply` cancels
  // the call and is returned; otherwise the last call's status is (OK once
  // every column has arrived).
  grpc::Status Price(const v1::PriceRequest& request, const OnReply& on_reply);
  // The same request cut into `parts` contiguous column ranges of
  // [column_begin, column_end), priced concurrently (over several servers
  // when the target names several), each retried on its own; `on_reply` must
  // be thread-safe. Results do not depend on the split: every column is
  // computed the same way. Columns and prices in `received` are not asked for.
  grpc::Status PriceSplit(const v1::PriceRequest& request, int64_t column_begin, int64_t column_end,
                          int parts, const OnReply& on_reply, const ReceivedResults& received = {});
  grpc::Status ListDevices(v1::ListDevicesReply* reply);
  // A deadline for every call from now on, retries included: a call still
  // running then ends with DEADLINE_EXCEEDED, and so does a retry that could
  // only start after it.
  void SetDeadline(std::chrono::system_clock::time_point deadline) { deadline_ = deadline; }
  // Full output's SC through a shared-memory ring of `slots` 4 MiB slots
  // (output.shared_memory; a server on this host started with
  // --shared-memory-output), a new ring for each call; 0 (default): in the
  // replies. `phase` places the values in their slots
  // (SharedMemoryRing.phase; NpyColumnPhase for a .npy's direct writes).
  void SetSharedMemory(int32_t slots, int32_t phase = 0) {
    shared_memory_slots_ = slots;
    shared_memory_phase_ = phase;
  }
  // Uploads a rows x columns column-major float32 matrix in chunks of
  // `chunk_bytes`; `set` receives its id and shape.
  grpc::Status UploadScenarios(int64_t rows, int64_t columns, const std::vector<float>& values,
                               v1::ScenarioSet* set, int64_t chunk_bytes = 1 << 20);
  // Asks the standard health service (grpc.health.v1.Health/Check) whether
  // `service` is serving: "" for the server, "pricer.v1.Pricer" for the
  // pricing service. It needs no token; it fails with DEADLINE_EXCEEDED
  // when the server does not answer within 5 s.
  grpc::Status Health(const std::string& service,
                      grpc::health::v1::HealthCheckResponse::ServingStatus* status);

 private:
  // Round robin picks among the servers it is connected to, and connections
  // come up one by one: before the parts of a split start, ListDevices until
  // no new server (ListDevicesReply.server_id) has answered for `parts` calls
  // (at least twice the servers seen) and 50 ms, at most 2 s
  // (client_protocol.proto's SplitWarmUp), so that the parts do not all go to
  // whichever server connected first.
  void ConnectToEveryServer(int parts);

  class PartRun;  // one column range of a Price call and its retries

  // `status` as gRPC's (the two share their codes' numbers).
  static grpc::Status ToGrpcStatus(const absl::Status& status);

  // Every call's context passes here before the call starts: it gets the
  // token, or the call is refused when the connection could not be set up.
  grpc::Status Start(grpc::ClientContext& context) const;

  absl::Status connection_;  // OK, or why CreateChannel failed (no channel)
  std::optional<std::chrono::system_clock::time_point> deadline_;
  int32_t shared_memory_slots_ = 0;
  int32_t shared_memory_phase_ = 0;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Pricer::Stub> stub_;
  // Price, called with the replies read as raw bytes (reply_decoding.h).
  std::unique_ptr<grpc::internal::RpcMethod> raw_price_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

}  // namespace pricer
