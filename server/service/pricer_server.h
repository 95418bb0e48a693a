// A running pricer server: the engine, its devices and the gRPC server on one
// port. pricerd wraps it in flags; tests start it in-process on port 0.
#pragma once

#include <grpcpp/server.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/engine.h"
#include "server/service/device_flags.h"
#include "server/service/pricer_service.h"

namespace pricer {

struct ServerOptions {
  // host:port to listen on; port 0 picks a free one (see PricerServer::port).
  std::string listen = "0.0.0.0:50051";
  // Which devices to price on: "auto", "cpu" or "cpu:K" (device_flags.h).
  std::string devices = "auto";
  // Memory budget per device (device_flags.h); the default is half of what
  // each device has free.
  DeviceMemory device_memory;
  // Scenario sets held in memory (bytes; least recently used leave first),
  // and the directory that keeps them across restarts (empty: none).
  int64_t scenario_store_bytes = 2LL << 30;
  std::string scenario_dir;
  // Largest accepted PriceRequest, bytes.
  int64_t max_request_bytes = 64LL << 20;
  EngineOptions engine;
};

class PricerServer {
 public:
  static absl::StatusOr<std::unique_ptr<PricerServer>> Start(const ServerOptions& options);
  // The same on devices built by the caller (tests inject faulty ones);
  // options.devices and options.device_memory are ignored.
  static absl::StatusOr<std::unique_ptr<PricerServer>> Start(
      const ServerOptions& options, std::vector<std::unique_ptr<Device>> devices);
  ~PricerServer();  // Shutdown()

  int port() const { return port_; }
  Engine& engine() { return *engine_; }
  ScenarioStore& store() { return *store_; }
  // Stops accepting calls, gives running ones `grace_seconds` to end, then
  // cancels them and stops the engine. Idempotent.
  void Shutdown(double grace_seconds = 5.0);
  // Blocks until Shutdown() is called from another thread.
  void Wait();

 private:
  PricerServer() = default;

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ScenarioStore> store_;
  std::unique_ptr<PricerService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace pricer
