#include "client/cli/health_command.h"

#include <iostream>

namespace pricer {

HealthCommand::HealthCommand(CLI::App& app)
    : Command(app.add_subcommand(
          "health",
          "ask the server's health service whether SERVICE is serving: prints SERVING, "
          "NOT_SERVING, SERVICE_UNKNOWN or UNKNOWN; exit 0 only when SERVING (needs no token)")) {
  verb_->add_option("--service", service_,
                    "the service asked about: \"\" (default) for the server, pricer.v1.Pricer "
                    "for the pricing service");
}

int HealthCommand::Run(PricerClient& client) {
  using grpc::health::v1::HealthCheckResponse;
  HealthCheckResponse::ServingStatus status;
  if (grpc::Status s = client.Health(service_, &status); !s.ok()) return Fail(s);
  std::cout << HealthCheckResponse::ServingStatus_Name(status) << "\n";
  return status == HealthCheckResponse::SERVING ? 0 : 1;
}

}  // namespace pricer
