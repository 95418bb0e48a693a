// What the verbs of `pricer` (price, upload, devices, health) have in common:
// each adds its subcommand to the app and runs once the command line named
// it, and each ends with the same exit codes.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/string_view.h"
#include "client/lib/pricer_client.h"

namespace pricer {

// One verb. Constructing it adds its subcommand and flags to the app, which
// write into the verb's members (so it neither moves nor copies); once the
// command line is parsed, the verb it named runs.
//
//   PriceCommand price(app);
//   app.parse(argc, argv);
//   if (price.parsed()) return price.Run(client);
class Command {
 public:
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;
  virtual ~Command() = default;

  // Whether the command line named this verb.
  bool parsed() const { return verb_->parsed(); }
  // Does what the verb says with the server; returns the exit code.
  virtual int Run(PricerClient& client) = 0;

 protected:
  explicit Command(CLI::App* verb) : verb_(verb) {}

  CLI::App* const verb_;  // owned by the app
};

// A refused or failed call: prints its status code and message; exit code 1.
int Fail(const grpc::Status& status);

// A command line, file or journal that cannot be used: prints `message`;
// exit code 2.
int Refuse(absl::string_view message);

}  // namespace pricer
