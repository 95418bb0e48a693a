// Who may use the service: bearer tokens from a file that names each client.
//
// The file (--auth-tokens-file) has one client per line,
//   client-name token [max-priority]
// with blank lines and lines starting with '#' ignored. max-priority
// (default 0) is the highest PriceRequest.priority the client may ask for.
// The file must not be readable or writable by others (mode o-rwx).
// Calls carry `authorization: Bearer <token>`; health and reflection need
// none. Without a file every caller is anonymous, named by its address.
#pragma once

#include <grpcpp/server_context.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pricer {

struct ClientIdentity {
  // Drives fairness and quotas: the token's client name, or the peer's
  // address without its port ("ipv4:10.0.0.7") when there are no tokens.
  std::string name;
  // The metrics label: the client name, or "anonymous" (a bounded set).
  std::string label;
  int max_priority = 0;
};

class Authenticator {
 public:
  // Everyone is anonymous and has priority 0.
  Authenticator() = default;
  // Reads a token file; INVALID_ARGUMENT naming the file and line when it is
  // malformed, PERMISSION_DENIED when others may read or write it.
  static absl::StatusOr<Authenticator> FromFile(const std::string& path);

  bool enabled() const { return !clients_.empty(); }
  // The client names, for the metrics' label set.
  std::vector<std::string> client_names() const;
  // The caller of `context`: UNAUTHENTICATED when tokens are on and the
  // call has no token or an unknown one. The token is compared in constant
  // time (digests of equal length, every entry compared) and never logged.
  absl::StatusOr<ClientIdentity> Identify(const grpc::ServerContextBase& context) const;

 private:
  using Digest = std::array<unsigned char, 32>;  // SHA-256
  struct Client {
    ClientIdentity identity;
    Digest token_digest;
  };
  static Digest DigestOf(absl::string_view token);

  std::vector<Client> clients_;
};

}  // namespace pricer
