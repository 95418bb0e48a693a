#include "server/service/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace pricer {

Authenticator::Digest Authenticator::DigestOf(absl::string_view token) {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
  return digest;
}

absl::StatusOr<Authenticator> Authenticator::FromFile(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-tokens-file ", path, ": cannot read it (", std::strerror(errno), ")"));
  }
  if ((info.st_mode & S_IRWXO) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "--auth-tokens-file %s: mode %04o lets other users read or write it; chmod o-rwx it", path,
        info.st_mode & 07777));
  }
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-tokens-file ", path, ": cannot open it"));
  }
  Authenticator auth;
  std::set<std::string> names;
  std::set<Digest> digests;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text.front() == '#') continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    const std::string where = absl::StrCat("--auth-tokens-file ", path, " line ", number);
    if (fields.size() < 2 || fields.size() > 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": has ", fields.size(), " fields; expected `client-name token [max-priority]`"));
    }
    Client client;
    client.identity.name = std::string(fields[0]);
    client.identity.label = client.identity.name;
    if (fields.size() == 3 &&
        (!absl::SimpleAtoi(fields[2], &client.identity.max_priority) ||
         client.identity.max_priority < 0 || client.identity.max_priority > 100)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": max-priority '", fields[2], "' is not an integer in [0, 100]"));
    }
    if (client.identity.name == "anonymous" || !names.insert(client.identity.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": client name '", client.identity.name,
                                                     "' is reserved or already used"));
    }
    client.token_digest = DigestOf(fields[1]);
    if (!digests.insert(client.token_digest).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the token of '", client.identity.name, "' is already used"));
    }
    auth.clients_.push_back(std::move(client));
  }
  if (auth.clients_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-tokens-file ", path, ": names no client"));
  }
  return auth;
}

std::vector<std::string> Authenticator::client_names() const {
  std::vector<std::string> names;
  for (const Client& client : clients_) names.push_back(client.identity.name);
  return names;
}

absl::StatusOr<ClientIdentity> Authenticator::Identify(
    const grpc::ServerContextBase& context) const {
  if (clients_.empty()) {
    // The peer without its port: one client however many connections it opens.
    std::string peer = context.peer();
    if (const size_t colon = peer.rfind(':'); colon != std::string::npos && colon > 5) {
      peer.resize(colon);
    }
    return ClientIdentity{std::move(peer), "anonymous", 0};
  }
  const auto& metadata = context.client_metadata();
  const auto header = metadata.find("authorization");
  if (header == metadata.end()) {
    return absl::UnauthenticatedError(
        "this server needs a bearer token: send the metadata `authorization: Bearer <token>` "
        "(pricer --token-file, Python Client(token=...))");
  }
  absl::string_view value(header->second.data(), header->second.size());
  if (!absl::ConsumePrefix(&value, "Bearer ")) {
    return absl::UnauthenticatedError("the authorization metadata is not `Bearer <token>`");
  }
  const Digest digest = DigestOf(value);
  const Client* found = nullptr;
  for (const Client& client : clients_) {
    const bool equal = CRYPTO_memcmp(client.token_digest.data(), digest.data(), digest.size()) == 0;
    if (equal) found = &client;
  }
  if (found == nullptr) return absl::UnauthenticatedError("unknown bearer token");
  return found->identity;
}

}  // namespace pricer
