// pricerd: the pricing server.
#include <csignal>
#include <cstdlib>
#include <thread>

#include "CLI/CLI.hpp"
#include "server/service/pricer_server.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  pricer::ServerOptions options;
  std::string log_level = "info";
  std::string max_request = "64MiB";
  std::string device_memory;

  CLI::App app{"pricerd: Monte Carlo scenario pricing over gRPC"};
  app.add_option("--listen", options.listen, "host:port to serve on")
      ->envname("PRICER_LISTEN")
      ->capture_default_str();
  app.add_option("--devices", options.devices, "devices to price on: auto or cpu")
      ->envname("PRICER_DEVICES")
      ->capture_default_str();
  app.add_option("--device-memory", device_memory,
                 "memory budget per device, e.g. 8GiB (default: half the host memory for cpu)")
      ->envname("PRICER_DEVICE_MEMORY");
  app.add_option("--max-request-bytes", max_request, "largest accepted request, e.g. 64MiB")
      ->envname("PRICER_MAX_REQUEST_BYTES")
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->envname("PRICER_LOG_LEVEL")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  spdlog::set_level(spdlog::level::from_str(log_level));
  absl::StatusOr<int64_t> max_request_bytes = pricer::ParseBytes(max_request);
  if (!max_request_bytes.ok()) {
    spdlog::error("--max-request-bytes: {}", std::string(max_request_bytes.status().message()));
    return 2;
  }
  options.max_request_bytes = *max_request_bytes;
  if (!device_memory.empty()) {
    absl::StatusOr<int64_t> bytes = pricer::ParseBytes(device_memory);
    if (!bytes.ok()) {
      spdlog::error("--device-memory: {}", std::string(bytes.status().message()));
      return 2;
    }
    options.device_memory_bytes = *bytes;
  }

  // SIGINT and SIGTERM stop the server gracefully: block them here (threads
  // inherit the mask) and wait for them on a thread of our own.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<pricer::PricerServer>> server =
      pricer::PricerServer::Start(options);
  if (!server.ok()) {
    spdlog::error("{}", std::string(server.status().message()));
    return 1;
  }
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    spdlog::info("signal {}: shutting down", signal);
    (*server)->Shutdown();
  });
  (*server)->Wait();
  stopper.join();
  spdlog::info("pricerd stopped");
  return 0;
}
