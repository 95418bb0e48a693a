#include "client/lib/retry_policy.h"

#include <cstdlib>
#include <iostream>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "pricer/v1/client_protocol.pb.h"

namespace pricer {
namespace {

// The codes RetryPolicy.retryable_codes names by their canonical names
// (Abseil's, which gRPC's share with their numbers).
std::set<grpc::StatusCode> ParseRetryableCodes() {
  std::set<grpc::StatusCode> codes;
  for (absl::string_view name :
       absl::StrSplit(v1::RetryPolicy::default_instance().retryable_codes(), ',')) {
    int code = grpc::StatusCode::OK;
    while (code <= grpc::StatusCode::UNAUTHENTICATED &&
           absl::StatusCodeToString(static_cast<absl::StatusCode>(code)) != name) {
      ++code;
    }
    if (code > grpc::StatusCode::UNAUTHENTICATED) {  // a typo in the proto
      std::cerr << "pricer: RetryPolicy.retryable_codes names '" << name
                << "', which is not a status code\n";
      std::abort();
    }
    codes.insert(static_cast<grpc::StatusCode>(code));
  }
  return codes;
}

}  // namespace

bool Retryable(grpc::StatusCode code) {
  static const std::set<grpc::StatusCode>* const codes =
      new std::set<grpc::StatusCode>(ParseRetryableCodes());
  return codes->contains(code);
}

}  // namespace pricer
