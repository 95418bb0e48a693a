// A running pricer server: the engine, its devices and the gRPC server on one
// port, with the standard health and reflection services and, when asked,
// Prometheus metrics on a second port. pricerd wraps it in flags; tests start
// it in-process on port 0.
#pragma once

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/backends/device_registry.h"
#include "server/scheduler/engine.h"
#include "server/service/pricer_service.h"
#include "server/service/server_metrics.h"

namespace pricer {

// PEM files of the server's TLS identity; TLS is off when cert_file is empty.
struct TlsFiles {
  std::string cert_file;
  std::string key_file;
  // When set, clients must present a certificate signed by this CA (mTLS).
  std::string client_ca_file;
};

struct ServerOptions {
  // host:port to listen on; port 0 picks a free one (see PricerServer::port).
  std::string listen = "0.0.0.0:50051";
  // host:port of the Prometheus /metrics endpoint; empty: none.
  std::string metrics_listen;
  TlsFiles tls;
  // The bearer token file (auth.h); empty: every caller is anonymous.
  std::string auth_tokens_file;
  // Which devices to price on: "auto", "cpu" or "cpu:K" (device_flags.h).
  std::string devices = "auto";
  // Memory budget per device (device_flags.h); the default is half of what
  // each device has free.
  DeviceMemory device_memory;
  // The bound on the page-locked host memory the cuda devices stage their
  // shards through (PinnedMemoryBytes): bytes, or a fraction of the host's
  // physical memory, an eighth by default. It becomes the engine's
  // EngineOptions::pinned_memory unless that is set.
  DeviceMemory pinned_memory{0, kDefaultPinnedFraction};
  // Scenario sets held in memory (bytes; least recently used leave first),
  // and the directory that keeps them across restarts (empty: none).
  int64_t scenario_store_bytes = 2LL << 30;
  std::string scenario_dir;
  // Largest accepted PriceRequest, bytes.
  int64_t max_request_bytes = 64LL << 20;
  // The declared bytes of all uploads in progress.
  int64_t max_upload_bytes_in_flight = 2LL << 30;
  // An upload with no chunk for this long is ended with DEADLINE_EXCEEDED; 0: never.
  double upload_idle_seconds = 60;
  // A Price call whose reader takes no reply for this long is cancelled; 0: never.
  double stalled_reader_seconds = 300;
  // Clients on this host may take full output through their shared-memory
  // ring (output.shared_memory).
  bool shared_memory_output = false;
  // When > 0, a connection older than this is asked to go away (HTTP/2
  // GOAWAY; its running calls finish), so that clients resolve the target
  // again and find new replicas.
  double max_connection_age_seconds = 0;
  // A connection that has not completed its HTTP/2 handshake within this is
  // closed (a client that sends nothing, junk or a TLS hello to a plaintext
  // port); one with no call for `max_connection_idle_seconds` is asked to go
  // away; at most `max_streams_per_connection` calls run on one connection.
  double handshake_timeout_seconds = 10;
  double max_connection_idle_seconds = 600;
  int max_streams_per_connection = 100;
  EngineOptions engine;
};

class PricerServer {
 public:
  // INVALID_ARGUMENT / PERMISSION_DENIED for bad options (naming the flag),
  // UNAVAILABLE naming the address when a port cannot be bound.
  static absl::StatusOr<std::unique_ptr<PricerServer>> Start(const ServerOptions& options);
  // The same on devices built by the caller (tests inject faulty ones);
  // options.devices and options.device_memory are ignored.
  static absl::StatusOr<std::unique_ptr<PricerServer>> Start(
      const ServerOptions& options, std::vector<std::unique_ptr<Device>> devices);
  ~PricerServer();  // Shutdown()

  int port() const { return port_; }
  // The metrics port; 0 when metrics are off.
  int metrics_port() const { return metrics_ == nullptr ? 0 : metrics_->port(); }
  Engine& engine() { return *engine_; }
  ScenarioStore& store() { return *store_; }
  // The graceful drain: health turns NOT_SERVING, new Price and
  // UploadScenarios calls are refused with UNAVAILABLE, running ones get
  // `drain_seconds` to end, then their jobs are stopped (UNAVAILABLE), the
  // gRPC server and the engine stop. Logs what was drained and what was cut.
  // Idempotent.
  void Shutdown(double drain_seconds = 5.0);
  // Blocks until Shutdown() is called from another thread.
  void Wait();

 private:
  PricerServer() = default;
  // Start, once the addresses are checked.
  static absl::StatusOr<std::unique_ptr<PricerServer>> StartOn(
      const ServerOptions& options, std::vector<std::unique_ptr<Device>> devices);
  // The engine on `devices`, the store, the metrics endpoint when asked and
  // the service; UNAVAILABLE when the metrics port cannot be bound.
  absl::Status StartService(const ServerOptions& options,
                            std::vector<std::unique_ptr<Device>> devices,
                            ServiceOptions service_options);
  // The gRPC server on options.listen (sets port_); UNAVAILABLE naming the
  // address when it cannot listen.
  absl::Status Listen(const ServerOptions& options,
                      std::shared_ptr<grpc::ServerCredentials> credentials);
  // The version, the devices and the addresses served.
  void LogStarted(const ServerOptions& options) const;
  // SERVING for "" and pricer.v1.Pricer, or NOT_SERVING.
  void SetServing(bool serving);

  // The store outlives the engine: a job's preparation reads stored sets.
  std::unique_ptr<ScenarioStore> store_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<PricerService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace pricer
