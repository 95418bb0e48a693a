// The one place where the engine's absl::Status becomes a grpc::Status; the
// codes map one to one.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace pricer {

inline grpc::StatusCode ToGrpcCode(absl::StatusCode code) {
  return static_cast<grpc::StatusCode>(code);
}

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), std::string(status.message()));
}

}  // namespace pricer
