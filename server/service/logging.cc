#include "server/service/logging.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

constexpr std::array<absl::string_view, 7> kLevels = {"trace", "debug",    "info", "warn",
                                                      "error", "critical", "off"};
constexpr char kJsonHead[] = R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","logger":"%n",)";

std::atomic<bool> json_logs{false};

void AppendJsonEscaped(absl::string_view text, std::string* out) {
  for (const char c : text) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          *out += c;
        }
    }
  }
}

// %* in a pattern: the message, escaped as a JSON string's contents.
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string escaped;
    AppendJsonEscaped(absl::string_view(message.payload.data(), message.payload.size()), &escaped);
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

std::shared_ptr<spdlog::logger> AccessLogger() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto made = spdlog::stdout_color_mt("access");
    made->set_level(spdlog::default_logger()->level());
    return made;
  }();
  return logger;
}

}  // namespace

absl::Status ConfigureLogging(absl::string_view level, absl::string_view format) {
  if (std::find(kLevels.begin(), kLevels.end(), level) == kLevels.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log-level '", level, "' is not one of trace, debug, info, warn, error, critical, off"));
  }
  if (format != "text" && format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-format '", format, "' is not one of text, json"));
  }
  spdlog::set_level(spdlog::level::from_str(std::string(level)));
  AccessLogger()->set_level(spdlog::level::from_str(std::string(level)));
  json_logs = format == "json";
  if (json_logs) {
    auto messages = std::make_unique<spdlog::pattern_formatter>();
    messages->add_flag<JsonEscapedMessage>('*').set_pattern(
        absl::StrCat(kJsonHead, R"("message":"%*"})"));
    spdlog::default_logger()->set_formatter(std::move(messages));
    // Access lines bring their own JSON fields (LogCall).
    AccessLogger()->set_formatter(
        std::make_unique<spdlog::pattern_formatter>(absl::StrCat(kJsonHead, "%v}")));
  }
  return absl::OkStatus();
}

void LogCall(const CallRecord& call) {
  const std::string code = absl::StatusCodeToString(static_cast<absl::StatusCode>(call.code));
  if (!json_logs) {
    AccessLogger()->info("{}", absl::StrFormat("method=%s client=%s peer=%s job=%s code=%s "
                                               "columns=%d flops=%.6g seconds=%.6f bytes=%d",
                                               call.method, call.client.empty() ? "-" : call.client,
                                               call.peer, call.job.empty() ? "-" : call.job, code,
                                               call.columns, call.flops, call.seconds, call.bytes));
    return;
  }
  // "message" as every other line has, then the fields as keys.
  std::string fields = absl::StrCat("\"message\":\"", call.method, " ", code, "\",");
  for (auto [key, value] : {std::pair<absl::string_view, absl::string_view>{"method", call.method},
                            {"client", call.client},
                            {"peer", call.peer},
                            {"job", call.job},
                            {"code", code}}) {
    absl::StrAppend(&fields, "\"", key, "\":\"");
    AppendJsonEscaped(value, &fields);
    absl::StrAppend(&fields, "\",");
  }
  absl::StrAppendFormat(&fields, R"("columns":%d,"flops":%.6g,"seconds":%.6f,"bytes":%d)",
                        call.columns, call.flops, call.seconds, call.bytes);
  AccessLogger()->info("{}", fields);
}

}  // namespace pricer
