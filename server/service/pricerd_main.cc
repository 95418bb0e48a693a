// pricerd: the pricing server.
#include <csignal>
#include <cstdlib>
#include <thread>
#include <tuple>

#include "CLI/CLI.hpp"
#include "server/service/pricer_server.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  pricer::ServerOptions options;
  std::string log_level = "info";
  std::string max_request = "64MiB";
  std::string device_memory = "0.5";
  std::string max_pending = "1GiB";
  std::string max_pending_per_job = "256MiB";
  std::string store_bytes = "2GiB";

  CLI::App app{"pricerd: Monte Carlo scenario pricing over gRPC"};
  app.add_option("--listen", options.listen, "host:port to serve on")
      ->envname("PRICER_LISTEN")
      ->capture_default_str();
  app.add_option("--devices", options.devices, "devices to price on: auto, cpu, cpu:K, cuda or cuda:I,J")
      ->envname("PRICER_DEVICES")
      ->capture_default_str();
  app.add_option("--device-memory", device_memory,
                 "memory budget per device: bytes (8GiB) or a fraction of its free memory (0.5)")
      ->envname("PRICER_DEVICE_MEMORY")
      ->capture_default_str();
  app.add_option("--max-request-bytes", max_request, "largest accepted request, e.g. 64MiB")
      ->envname("PRICER_MAX_REQUEST_BYTES")
      ->capture_default_str();
  app.add_option("--max-queued-jobs", options.engine.max_queued_jobs,
                 "jobs admitted and not finished; more are refused (RESOURCE_EXHAUSTED)")
      ->envname("PRICER_MAX_QUEUED_JOBS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-pending-bytes", max_pending,
                 "host memory for result chunks not yet sent, all jobs together")
      ->envname("PRICER_MAX_PENDING_BYTES")
      ->capture_default_str();
  app.add_option("--max-pending-bytes-per-job", max_pending_per_job,
                 "host memory for result chunks not yet sent, per job")
      ->envname("PRICER_MAX_PENDING_BYTES_PER_JOB")
      ->capture_default_str();
  app.add_option("--max-shards-in-flight", options.engine.max_shards_in_flight,
                 "most shards one device runs at once (its worker threads)")
      ->envname("PRICER_MAX_SHARDS_IN_FLIGHT")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--scenario-store-bytes", store_bytes,
                 "host memory for uploaded scenario sets (least recently used leave first)")
      ->envname("PRICER_SCENARIO_STORE_BYTES")
      ->capture_default_str();
  app.add_option("--scenario-dir", options.scenario_dir,
                 "directory that keeps uploaded scenario sets across restarts")
      ->envname("PRICER_SCENARIO_DIR");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->envname("PRICER_LOG_LEVEL")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  spdlog::set_level(spdlog::level::from_str(log_level));
  for (auto [flag, text, out] :
       {std::tuple{"--max-request-bytes", &max_request, &options.max_request_bytes},
        std::tuple{"--max-pending-bytes", &max_pending, &options.engine.max_pending_bytes},
        std::tuple{"--max-pending-bytes-per-job", &max_pending_per_job,
                   &options.engine.max_pending_bytes_per_job},
        std::tuple{"--scenario-store-bytes", &store_bytes, &options.scenario_store_bytes}}) {
    absl::StatusOr<int64_t> bytes = pricer::ParseBytes(*text);
    if (!bytes.ok()) {
      spdlog::error("{}: {}", flag, std::string(bytes.status().message()));
      return 2;
    }
    *out = *bytes;
  }
  absl::StatusOr<pricer::DeviceMemory> memory = pricer::ParseDeviceMemory(device_memory);
  if (!memory.ok()) {
    spdlog::error("--device-memory: {}", std::string(memory.status().message()));
    return 2;
  }
  options.device_memory = *memory;

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
