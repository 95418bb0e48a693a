#include "server/service/pricer_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace pricer {

absl::StatusOr<std::unique_ptr<PricerServer>> PricerServer::Start(const ServerOptions& options) {
  absl::StatusOr<std::vector<std::unique_ptr<Device>>> devices =
      MakeDevices(options.devices, options.device_memory);
  if (!devices.ok()) return devices.status();
  return Start(options, *std::move(devices));
}

absl::StatusOr<std::unique_ptr<PricerServer>> PricerServer::Start(
    const ServerOptions& options, std::vector<std::unique_ptr<Device>> devices) {
  std::unique_ptr<PricerServer> server(new PricerServer());
  server->engine_ = std::make_unique<Engine>(std::move(devices), options.engine);
  if (!options.scenario_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.scenario_dir, error);
    if (error) {
      return absl::InvalidArgumentError(
          absl::StrCat("--scenario-dir ", options.scenario_dir, ": ", error.message()));
    }
  }
  server->store_ =
      std::make_unique<ScenarioStore>(options.scenario_store_bytes, options.scenario_dir);
  server->service_ = std::make_unique<PricerService>(
      *server->engine_, *server->store_, options.max_request_bytes, options.engine.max_queued_jobs);

  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(server->service_.get());
  // The transport reads requests up to twice the limit, so that one over the
  // limit reaches the service and is refused with a message that explains
  // the limit; anything larger is dropped by gRPC itself.
  const int64_t transport_limit = std::min<int64_t>(2 * options.max_request_bytes, INT32_MAX);
  builder.SetMaxReceiveMessageSize(static_cast<int>(transport_limit));
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }
  for (const DeviceStatus& d : server->engine_->DeviceStatuses()) {
    spdlog::info("device {} ({}), memory budget {} bytes", d.name, d.kind, d.memory_budget_bytes);
  }
  spdlog::info("pricerd listening on {} (port {})", options.listen, server->port_);
  return server;
}

PricerServer::~PricerServer() { Shutdown(); }

void PricerServer::Shutdown(double grace_seconds) {
  if (shut_down_) return;
  shut_down_ = true;
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(grace_seconds));
  server_->Shutdown(deadline);
  engine_.reset();  // cancels what is left and joins the workers
}

void PricerServer::Wait() { server_->Wait(); }

}  // namespace pricer
