#include "server/service/pricer_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "pricer/version.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

constexpr char kServiceName[] = "pricer.v1.Pricer";

// host:port with a port in [0, 65535] (0: a free one); --listen also takes
// gRPC's unix:PATH.
absl::Status CheckListenAddress(const char* flag, const std::string& address) {
  if (absl::string_view(flag) == "--listen" && address.rfind("unix:", 0) == 0) {
    return absl::OkStatus();
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", address, "' is not host:port (e.g. 0.0.0.0:50051 or [::]:50051)"));
  }
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", address,
                     "' has no host: use 0.0.0.0 for every interface, 127.0.0.1 for this host"));
  }
  int number = -1;
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(port, &number) || number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " '", address, "': port '", port,
                                                   "' is not in 1..65535 (0 picks a free port)"));
  }
  return absl::OkStatus();
}

absl::Status CheckAddresses(const ServerOptions& options) {
  RETURN_IF_ERROR(CheckListenAddress("--listen", options.listen));
  if (options.metrics_listen.empty()) return absl::OkStatus();
  return CheckListenAddress("--metrics-listen", options.metrics_listen);
}

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": cannot read it, or it is empty"));
  }
  return text.str();
}

// TLS (mTLS with a client CA) or plaintext.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const TlsFiles& tls) {
  if (tls.cert_file.empty() && tls.key_file.empty()) {
    if (!tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  ASSIGN_OR_RETURN(std::string cert, ReadPem("--tls-cert", tls.cert_file));
  ASSIGN_OR_RETURN(std::string key, ReadPem("--tls-key", tls.key_file));
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({key, cert});
  if (!tls.client_ca_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem("--tls-client-ca", tls.client_ca_file));
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

// The service's options but its metrics, which exist once the engine does.
absl::StatusOr<ServiceOptions> ToServiceOptions(const ServerOptions& options) {
  ServiceOptions service_options;
  service_options.max_request_bytes = options.max_request_bytes;
  service_options.max_upload_bytes_in_flight = options.max_upload_bytes_in_flight;
  service_options.upload_idle_seconds = options.upload_idle_seconds;
  service_options.stalled_reader_seconds = options.stalled_reader_seconds;
  service_options.shared_memory_output = options.shared_memory_output;
  service_options.max_queued_jobs = options.engine.max_queued_jobs;
  if (!options.auth_tokens_file.empty()) {
    ASSIGN_OR_RETURN(service_options.authenticator,
                     Authenticator::FromFile(options.auth_tokens_file));
  }
  return service_options;
}

// --scenario-dir and its parents, when set and missing.
absl::Status CreateScenarioDir(const std::string& dir) {
  if (dir.empty()) return absl::OkStatus();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat("--scenario-dir ", dir, ": ", error.message()));
  }
  return absl::OkStatus();
}

// The HTTP/2 settings of the listening port: no port sharing, client pings,
// connection age, idle and handshake timeouts, streams per connection and
// the largest message read.
void ConfigureTransport(const ServerOptions& options, grpc::ServerBuilder& builder) {
  // gRPC shares a port between servers by default (SO_REUSEPORT): a second
  // pricerd on a busy port must fail instead of taking half the calls.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Clients ping every 10 s during a call to find a dead link (a stats job
  // may send nothing for minutes): accept that, instead of gRPC's 5 minutes
  // after which it ends the connection with "too_many_pings".
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  if (options.max_connection_age_seconds > 0) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_MS,
        static_cast<int>(std::min(options.max_connection_age_seconds * 1000, 2e9)));
    // Calls running on an old connection are never cut: they end on it.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, INT_MAX);
  }
  // The transport reads requests up to twice the limit, so that one over the
  // limit reaches the service and is refused with a message that explains
  // the limit; anything larger is dropped by gRPC itself.
  const int64_t transport_limit = std::min<int64_t>(2 * options.max_request_bytes, INT32_MAX);
  builder.SetMaxReceiveMessageSize(static_cast<int>(transport_limit));
  // Connections that hold a descriptor and do nothing: see ServerOptions.
  auto milliseconds = [](double seconds) {
    return static_cast<int>(std::clamp(seconds * 1000, 1.0, 2e9));
  };
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             milliseconds(options.handshake_timeout_seconds));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             milliseconds(options.max_connection_idle_seconds));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_streams_per_connection);
}

// `options` whose engine has the host's pinned memory account: the one it
// was given, or a new one bounded by options.pinned_memory.
ServerOptions WithPinnedMemory(const ServerOptions& options) {
  ServerOptions with = options;
  if (with.engine.pinned_memory == nullptr) {
    with.engine.pinned_memory =
        std::make_shared<MemoryAccount>(PinnedMemoryBytes(options.pinned_memory));
  }
  return with;
}

bool AnyDeviceUsable(const Engine& engine) {
  for (const DeviceStatus& d : engine.DeviceStatuses()) {
    if (d.lost.empty()) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PricerServer>> PricerServer::Start(const ServerOptions& options) {
  // Bad addresses first: they need no devices to be found out.
  RETURN_IF_ERROR(CheckAddresses(options));
  const ServerOptions with_pinned = WithPinnedMemory(options);
  ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<Device>> devices,
      MakeDevices(options.devices, options.device_memory, with_pinned.engine.pinned_memory));
  return StartOn(with_pinned, std::move(devices));
}

absl::StatusOr<std::unique_ptr<PricerServer>> PricerServer::Start(
    const ServerOptions& options, std::vector<std::unique_ptr<Device>> devices) {
  RETURN_IF_ERROR(CheckAddresses(options));
  return StartOn(WithPinnedMemory(options), std::move(devices));
}

absl::StatusOr<std::unique_ptr<PricerServer>> PricerServer::StartOn(
    const ServerOptions& options, std::vector<std::unique_ptr<Device>> devices) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials, Credentials(options.tls));
  ASSIGN_OR_RETURN(ServiceOptions service_options, ToServiceOptions(options));
  RETURN_IF_ERROR(CreateScenarioDir(options.scenario_dir));
  std::unique_ptr<PricerServer> server(new PricerServer());
  RETURN_IF_ERROR(server->StartService(options, std::move(devices), std::move(service_options)));
  RETURN_IF_ERROR(server->Listen(options, credentials));
  server->SetServing(AnyDeviceUsable(*server->engine_));
  server->LogStarted(options);
  return server;
}

absl::Status PricerServer::StartService(const ServerOptions& options,
                                        std::vector<std::unique_ptr<Device>> devices,
                                        ServiceOptions service_options) {
  EngineOptions engine_options = options.engine;
  // A lost device may leave none to serve with: health follows.
  engine_options.on_device_lost = [this](bool any_device_usable) {
    if (!any_device_usable && server_ != nullptr) SetServing(false);
  };
  engine_ = std::make_unique<Engine>(std::move(devices), engine_options);
  store_ = std::make_unique<ScenarioStore>(options.scenario_store_bytes, options.scenario_dir);
  if (const int64_t torn = store_->RemoveTornWrites(); torn > 0) {
    spdlog::warn(
        "removed {} temporary file{} of scenario-set writes that a crash cut short from {}", torn,
        torn == 1 ? "" : "s", options.scenario_dir);
  }
  if (!options.metrics_listen.empty()) {
    ASSIGN_OR_RETURN(metrics_, ServerMetrics::Start(options.metrics_listen, *engine_, *store_));
    service_options.metrics = metrics_.get();
  }
  service_ = std::make_unique<PricerService>(*engine_, *store_, std::move(service_options));
  return absl::OkStatus();
}

absl::Status PricerServer::Listen(const ServerOptions& options,
                                  std::shared_ptr<grpc::ServerCredentials> credentials) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  ConfigureTransport(options, builder);
  builder.AddListeningPort(options.listen, std::move(credentials), &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options.listen,
        ": the port is in use, or the address is not one of this host's, or not permitted"));
  }
  return absl::OkStatus();
}

void PricerServer::LogStarted(const ServerOptions& options) const {
  spdlog::info("pricerd {} ({})", kVersion, kBuildOptions);
  for (const DeviceStatus& d : engine_->DeviceStatuses()) {
    spdlog::info("device {} ({}, {}), memory budget {} bytes, headroom outside it {} bytes", d.name,
                 d.kind, d.kernels, d.memory_budget_bytes, d.headroom_bytes);
  }
  spdlog::info("pinned host memory bound {} bytes", engine_->Status().pinned_budget_bytes);
  spdlog::info("pricerd listening on {} (port {}){}{}", options.listen, port_,
               options.tls.cert_file.empty() ? ", plaintext" : ", TLS",
               options.tls.client_ca_file.empty() ? "" : " with client certificates");
  if (metrics_ != nullptr) {
    const std::string host = options.metrics_listen.substr(0, options.metrics_listen.rfind(':'));
    spdlog::info("metrics on http://{}:{}/metrics", host, metrics_->port());
  }
}

PricerServer::~PricerServer() { Shutdown(); }

void PricerServer::SetServing(bool serving) {
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);  // "" and every service registered so far
  health->SetServingStatus(kServiceName, serving);
}

void PricerServer::Shutdown(double drain_seconds) {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  SetServing(false);
  service_->StartDraining();
  const int64_t running = service_->active_calls();
  spdlog::info("draining: health NOT_SERVING, new calls refused, {} calls running, {} s to end",
               running, drain_seconds);
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(drain_seconds));
  int64_t cut = 0;
  if (!service_->WaitForCalls(deadline)) {
    cut = service_->active_calls();
    const std::vector<std::string> jobs = engine_->StopAll(absl::UnavailableError(absl::StrCat(
        "the server shut down: its drain time of ", drain_seconds, " s ran out; retry elsewhere")));
    spdlog::warn("drain time of {} s ran out: cutting {} calls, jobs {}", drain_seconds, cut,
                 jobs.empty() ? "none" : absl::StrJoin(jobs, ", "));
    // The cut calls end with that status; a reader that does not read is
    // cancelled by the gRPC shutdown below.
    service_->WaitForCalls(Clock::now() + std::chrono::seconds(2));
  }
  spdlog::info("drained in {:.2f} s: {} calls ended by themselves, {} cut",
               std::chrono::duration<double>(Clock::now() - start).count(), running - cut, cut);
  // Health watches and reflection streams end here.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  metrics_.reset();
  engine_.reset();  // cancels what is left and joins the workers
}

void PricerServer::Wait() { server_->Wait(); }

}  // namespace pricer
