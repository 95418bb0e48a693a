#include "client/lib/connection.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "pricer/v1/client_protocol.pb.h"

namespace pricer {

namespace {

// The contents of the file at `path`, which `flag` named.
absl::StatusOr<std::string> ReadFlagFile(const char* flag, const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(flag, ": cannot open ", path, ": ", std::strerror(errno)));
  }
  std::string text;
  char buffer[4096];
  size_t read = 0;
  while ((read = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, read);
  const int error = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (error != 0) {
    return absl::NotFoundError(
        absl::StrCat(flag, ": cannot read ", path, ": ", std::strerror(error)));
  }
  return text;
}

// A PEM file for `flag`: read here, so that a wrong path is an error that
// names it rather than a failed TLS handshake.
absl::Status ReadPem(const char* flag, const std::string& path, std::string* pem) {
  ASSIGN_OR_RETURN(std::string text, ReadFlagFile(flag, path));
  if (text.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", path, " is not a PEM file (no -----BEGIN line)"));
  }
  *pem = std::move(text);
  return absl::OkStatus();
}

// gRPC aborts on metadata it cannot send, so a token read from a file is
// checked first: printable ASCII, no spaces (HTTP/2 header values).
absl::Status CheckToken(const std::string& token) {
  for (size_t k = 0; k < token.size(); ++k) {
    const auto byte = static_cast<unsigned char>(token[k]);
    if (byte <= 0x20 || byte >= 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrFormat("the token has byte 0x%02x at offset %d; a token is printable ASCII "
                          "without spaces",
                          byte, k));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(const std::string& target,
                                                             const ConnectionOptions& options) {
  RETURN_IF_ERROR(CheckToken(options.token));
  const v1::ChannelSettings& settings = v1::ChannelSettings::default_instance();
  grpc::ChannelArguments arguments;
  arguments.SetLoadBalancingPolicyName(settings.load_balancing_policy());
  // A server whose host or link goes away sends no RST: without pings a call
  // to it would wait for TCP's own timeout (many minutes) before the part is
  // retried elsewhere. A ping every 10 s, answered within 5 s, finds it out;
  // pricerd accepts pings that often (pricer_server.cc).
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, settings.keepalive_time_ms());
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, settings.keepalive_timeout_ms());
  arguments.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, settings.max_pings_without_data());
  if (!options.tls()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), arguments);
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key go together: a client certificate needs its private key");
  }
  grpc::SslCredentialsOptions ssl;
  for (const auto& [flag, path, pem] :
       {std::tuple("--tls-ca", &options.tls_ca_file, &ssl.pem_root_certs),
        std::tuple("--tls-cert", &options.tls_cert_file, &ssl.pem_cert_chain),
        std::tuple("--tls-key", &options.tls_key_file, &ssl.pem_private_key)}) {
    if (path->empty()) continue;
    RETURN_IF_ERROR(ReadPem(flag, *path, pem));
  }
  if (!options.tls_server_name.empty()) {
    arguments.SetSslTargetNameOverride(options.tls_server_name);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), arguments);
}

void AddToken(const std::string& token, grpc::ClientContext& context) {
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadFlagFile("--token-file", path));
  const absl::string_view token = absl::StripAsciiWhitespace(text);
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file: ", path, " is empty"));
  }
  return std::string(token);
}

}  // namespace pricer
