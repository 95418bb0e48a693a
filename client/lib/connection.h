// How the client reaches a server: the channel (round robin, TLS) and the
// bearer token every call carries.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace pricer {

// What `pricer --tls-ca ... --token-file ...` says. TLS is on when any tls_
// field is set; all empty: plain text.
//
//   ConnectionOptions options;
//   options.tls_ca_file = "ca.pem";
//   options.token = *ReadTokenFile("token");
//   PricerClient client("pricer.example:50051", options);
struct ConnectionOptions {
  // Sent as `authorization: Bearer <token>` with every call; empty: none.
  // Printable ASCII without spaces.
  std::string token;
  // PEM roots that verify the server's certificate; empty: the system roots.
  std::string tls_ca_file;
  // PEM certificate chain and private key of this client, for a server that
  // asks for one (mutual TLS); both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // The name checked in the server's certificate instead of the target's
  // host, e.g. when connecting to an IP address.
  std::string tls_server_name;

  bool tls() const {
    return !tls_ca_file.empty() || !tls_cert_file.empty() || !tls_key_file.empty() ||
           !tls_server_name.empty();
  }
};

// The channel to `target` that `options` describe: calls go round robin over
// every address the target resolves to (a list such as
// ipv4:127.0.0.1:50051,127.0.0.1:50052, or a DNS name with several records).
// Fails, naming the flag and the path, when a PEM file cannot be read or is
// not PEM, and when the token cannot be sent as metadata.
absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(const std::string& target,
                                                             const ConnectionOptions& options);

// Adds `token` (unless empty) to the metadata of a call about to start.
// Metadata rather than call credentials: gRPC sends call credentials only
// over TLS, and a token must also work on a plain-text channel.
void AddToken(const std::string& token, grpc::ClientContext& context);

// The token in the file at `path` (--token-file), surrounding whitespace
// and newlines trimmed; an empty file is an error.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace pricer
