// pricerd's logs (spdlog): text or JSON lines on stdout, and one access line
// per call when it ends.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/service/call_record.h"

namespace pricer {

// `level`: trace, debug, info, warn, error, critical or off. `format`: text
// (spdlog's default pattern) or json (one object per line with "time",
// "level", "logger" and "message"; access lines carry their fields as keys
// instead of "message"). INVALID_ARGUMENT naming the value otherwise.
absl::Status ConfigureLogging(absl::string_view level, absl::string_view format);

// The access line of one call, on the "access" logger: in text
//   [access] [info] method=Price client=alice peer=ipv4:127.0.0.1:4242 job=job-7 code=OK
//   columns=20000 flops=2e+11 seconds=1.27 bytes=320512
// and the same fields as JSON keys in json.
void LogCall(const CallRecord& call);

}  // namespace pricer
