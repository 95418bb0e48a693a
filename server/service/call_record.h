// What one call did, when it ends: the access log line and the metrics both
// come from it.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace pricer {

struct CallRecord {
  std::string method;        // "Price", "ListDevices", "UploadScenarios"
  std::string client;        // ClientIdentity::name; empty before authentication
  std::string client_label;  // ClientIdentity::label, "anonymous" when unknown
  std::string peer;          // the caller's address
  std::string job;           // the job id, when one was admitted
  grpc::StatusCode code = grpc::StatusCode::OK;
  int64_t columns = 0;  // scenario columns priced (Price) or uploaded (UploadScenarios)
  double flops = 0;     // GEMM flops of the job, 2 P N per column
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds = 0;          // from `start` to the call's end
  int64_t bytes = 0;           // serialized reply bytes written to the caller
  int64_t bytes_received = 0;  // upload payload bytes
};

}  // namespace pricer
