// The one place where the engine's absl::Status becomes a grpc::Status; the
// codes map one to one.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"
#include "absl/types/optional.h"
#include "server/service/field_checks.h"

namespace pricer {

inline grpc::StatusCode ToGrpcCode(absl::StatusCode code) {
  return static_cast<grpc::StatusCode>(code);
}

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), std::string(status.message()));
}

// The trailing metadata `pricer-field` of a call that ends with `status`:
// the request field it names (field_checks.h), for clients to show next to
// the message. Call before Finish.
inline void AddFieldTrailer(const absl::Status& status, grpc::ServerContextBase& context) {
  if (absl::optional<absl::Cord> field = status.GetPayload(kFieldPayload); field.has_value()) {
    context.AddTrailingMetadata("pricer-field", std::string(*field));
  }
}

}  // namespace pricer
