// `pricer health`: what a container's HEALTHCHECK runs; exit 0 only when the
// service asked about is serving.
#pragma once

#include <string>

#include "client/cli/command.h"

namespace pricer {

class HealthCommand final : public Command {
 public:
  explicit HealthCommand(CLI::App& app);

  int Run(PricerClient& client) override;

 private:
  std::string service_;  // --service
};

}  // namespace pricer
