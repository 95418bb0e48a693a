// Which broken calls a client asks again: client_protocol.proto's
// RetryPolicy.retryable_codes (docs/retry-protocol.md), read once.
#pragma once

#include <grpcpp/support/status.h>

namespace pricer {

// Whether a call that ended with `code`, not stopped by the client itself,
// may succeed when asked again: UNAVAILABLE (a server killed, draining,
// shutting down, cut off, or whose device went away) or ABORTED. A refused
// request (INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED, ...) or a failed
// one (INTERNAL, UNKNOWN, CANCELLED by someone else, ...) would end the same
// way again.
//
//   if (!status.ok() && !Retryable(status.error_code())) return status;
bool Retryable(grpc::StatusCode code);

}  // namespace pricer
