#include "server/service/pricer_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/cpu/cpu_device.h"
#include "spdlog/spdlog.h"

namespace pricer {

absl::StatusOr<int64_t> ParseBytes(absl::string_view text) {
  static constexpr std::pair<absl::string_view, int64_t> kUnits[] = {
      {"kib", 1LL << 10},   {"mib", 1LL << 20},      {"gib", 1LL << 30},
      {"tib", 1LL << 40},   {"kb", 1000LL},          {"mb", 1000000LL},
      {"gb", 1000000000LL}, {"tb", 1000000000000LL}, {"b", 1}};
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  absl::string_view number = lower;
  int64_t unit = 1;
  for (const auto& [suffix, scale] : kUnits) {
    if (number.size() > suffix.size() && absl::EndsWith(number, suffix)) {
      number.remove_suffix(suffix.size());
      unit = scale;
      break;
    }
  }
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(number), &value) || !(value > 0) ||
      value * static_cast<double>(unit) > 9.0e18) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a byte count such as 1048576, 512MiB or 2GB"));
  }
  return static_cast<int64_t>(value * static_cast<double>(unit));
}

absl::StatusOr<std::vector<std::unique_ptr<Device>>> MakeDevices(absl::string_view devices,
                                                                 int64_t device_memory_bytes) {
  const int64_t budget = device_memory_bytes > 0 ? device_memory_bytes : HostMemoryBytes() / 2;
  std::vector<std::unique_ptr<Device>> out;
  if (devices == "auto" || devices == "cpu") {
    const int threads = std::max(1u, std::thread::hardware_concurrency());
    out.push_back(std::make_unique<CpuDevice>("cpu0", budget, threads));
    return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--devices '", devices, "' is not one of: auto, cpu"));
}

absl::StatusOr<std::unique_ptr<PricerServer>> PricerServer::Start(const ServerOptions& options) {
  absl::StatusOr<std::vector<std::unique_ptr<Device>>> devices =
      MakeDevices(options.devices, options.device_memory_bytes);
  if (!devices.ok()) return devices.status();

  std::unique_ptr<PricerServer> server(new PricerServer());
  server->engine_ = std::make_unique<Engine>(*std::move(devices), options.engine);
  server->service_ = std::make_unique<PricerService>(*server->engine_, options.max_request_bytes);

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
