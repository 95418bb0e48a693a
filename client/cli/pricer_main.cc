// pricer: the command-line client. `pricer price` sends one pricing request
// and writes its results; `pricer upload` stores a scenario matrix;
// `pricer devices` lists the server's devices; `pricer health` asks whether
// the server is serving. Each verb is a Command (command.h) of its own file.
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/cli/command.h"
#include "client/cli/devices_command.h"
#include "client/cli/health_command.h"
#include "client/cli/price_command.h"
#include "client/cli/upload_command.h"
#include "client/lib/connection.h"
#include "client/lib/pricer_client.h"
#include "pricer/v1/client_protocol.pb.h"
#include "pricer/version.h"

namespace {

// How to reach the server: before or after the verb, on every verb.
void AddConnectionOptions(CLI::App& app, pricer::ConnectionOptions& connection,
                          std::string& token_file) {
  constexpr char kConnection[] = "Connection (before or after the verb)";
  app.add_option("--tls-ca", connection.tls_ca_file,
                 "connect with TLS; PEM file of the roots that verify the server's certificate "
                 "(default: the system roots)")
      ->group(kConnection);
  app.add_option("--tls-cert", connection.tls_cert_file,
                 "connect with TLS; PEM file of this client's certificate chain, for a server "
                 "that asks for one (mutual TLS; with --tls-key)")
      ->group(kConnection);
  app.add_option("--tls-key", connection.tls_key_file, "PEM file of the private key of --tls-cert")
      ->group(kConnection);
  app.add_option("--tls-server-name", connection.tls_server_name,
                 "connect with TLS; the name to check in the server's certificate instead of "
                 "the host of --target (e.g. when the target is an IP address)")
      ->group(kConnection);
  app.add_option("--token-file", token_file,
                 "file holding the bearer token sent with every call (surrounding whitespace "
                 "trimmed); without it, the environment variable PRICER_TOKEN holds the token "
                 "itself")
      ->envname("PRICER_TOKEN_FILE")
      ->group(kConnection);
}

// The token: the file --token-file (or PRICER_TOKEN_FILE) names, else
// PRICER_TOKEN, which holds the token itself; none when neither is given.
absl::StatusOr<std::string> ReadToken(const std::string& token_file) {
  if (!token_file.empty()) return pricer::ReadTokenFile(token_file);
  const char* token = std::getenv("PRICER_TOKEN");
  return std::string(absl::StripAsciiWhitespace(token == nullptr ? "" : token));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pricer: client of the pricer Monte Carlo scenario pricing service"};
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       absl::StrCat("pricer ", pricer::kVersion, " (", pricer::kBuildOptions, ")"));
  // The verbs inherit this: a flag of the app may follow the verb too
  // (`pricer price --token-file t ...`).
  app.fallthrough();
  std::string target = pricer::v1::ChannelSettings::default_instance().default_target();
  // Before or after the verb: the app's flags are the verbs' too (fallthrough),
  // so that one option, the app's, takes it and its environment variable.
  app.add_option("--target", target, "server address host:port")
      ->envname("PRICER_TARGET")
      ->capture_default_str()
      ->group("Connection (before or after the verb)");
  pricer::ConnectionOptions connection;
  std::string token_file;
  AddConnectionOptions(app, connection, token_file);

  pricer::PriceCommand price(app);
  pricer::UploadCommand upload(app);
  pricer::DevicesCommand devices(app);
  pricer::HealthCommand health(app);
  for (CLI::App* verb : app.get_subcommands({})) {
    verb->footer(
        "Connection flags, before or after the verb (see pricer --help): --target, --tls-ca, "
        "--tls-cert, --tls-key, --tls-server-name, --token-file.");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints its message (or the help, the version: exit 0); its own
    // exit codes (105, 109, ...) are all a usage error here.
    return app.exit(e) == 0 ? 0 : 2;
  }

  absl::StatusOr<std::string> token = ReadToken(token_file);
  if (!token.ok()) return pricer::Refuse(token.status().message());
  connection.token = *std::move(token);
  pricer::PricerClient client(target, connection);
  for (pricer::Command* command :
       std::initializer_list<pricer::Command*>{&price, &upload, &devices, &health}) {
    if (command->parsed()) return command->Run(client);
  }
  return 2;  // not reached: the parse has made sure that one verb was named
}
