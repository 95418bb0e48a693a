#include "client/cli/command.h"

#include <iostream>

#include "absl/status/status.h"

namespace pricer {

int Fail(const grpc::Status& status) {
  const int code = static_cast<int>(status.error_code());
  // gRPC's and Abseil's status codes share their numbers and names.
  std::cerr << "pricer: " << code << " "
            << absl::StatusCodeToString(static_cast<absl::StatusCode>(code)) << ": "
            << status.error_message() << "\n";
  return 1;
}

int Refuse(absl::string_view message) {
  std::cerr << "pricer: " << message << "\n";
  return 2;
}

}  // namespace pricer
