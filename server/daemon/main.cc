// pricerd: the pricing server.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <tuple>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "pricer/version.h"
#include "server/service/logging.h"
#include "server/service/pricer_server.h"
#include "spdlog/spdlog.h"

namespace {

// SIGTERM and SIGINT reach whichever thread the kernel picks, including
// threads that libraries (OpenBLAS) start before main: so the handler, not a
// signal mask, turns them into a byte on a pipe that the drain thread reads.
// A second signal while draining exits at once. SIGHUP (the usual "reload")
// is logged and otherwise ignored: certificates and tokens are read at start.
int signal_pipe[2] = {-1, -1};
std::atomic<int> signals_seen{0};

extern "C" void OnStopSignal(int signal) {
  if (signal != SIGHUP && signals_seen.fetch_add(1) > 0) {
    constexpr char kMessage[] = "pricerd: second signal: exiting now, without draining\n";
    (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    _exit(1);
  }
  const char byte = static_cast<char>(signal);
  (void)!write(signal_pipe[1], &byte, 1);
}

void InstallStopHandlers() {
  if (pipe(signal_pipe) != 0) std::abort();
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  pricer::ServerOptions options;
  options.metrics_listen = "0.0.0.0:9464";
  std::string log_level = "info";
  std::string log_format = "text";
  std::string max_request = "64MiB";
  std::string device_memory = "0.5";
  std::string max_pending = "1GiB";
  std::string max_pending_per_job = "256MiB";
  std::string store_bytes = "2GiB";
  double drain_seconds = 30;
  int64_t max_jobs_per_client = 0;
  options.engine.max_pending_flops_per_client = 1e15;

  CLI::App app{"pricerd: Monte Carlo scenario pricing over gRPC"};
  app.set_version_flag(
      "--version", absl::StrCat("pricerd ", pricer::kVersion, " (", pricer::kBuildOptions, ")"));
  app.add_option("--listen", options.listen, "host:port to serve gRPC on (port 0: a free one)")
      ->envname("PRICER_LISTEN")
      ->capture_default_str();
  app.add_option("--metrics-listen", options.metrics_listen,
                 "host:port of the Prometheus /metrics endpoint; empty: none")
      ->envname("PRICER_METRICS_LISTEN")
      ->capture_default_str();
  app.add_option("--drain-seconds", drain_seconds,
                 "on SIGTERM or SIGINT, how long running calls may take to end before they are "
                 "cut")
      ->envname("PRICER_DRAIN_SECONDS")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_option("--max-connection-age-seconds", options.max_connection_age_seconds,
                 "ask clients to reconnect after this long (HTTP/2 GOAWAY; running calls "
                 "finish), so that they resolve the target again and find new replicas; 0: never")
      ->envname("PRICER_MAX_CONNECTION_AGE_SECONDS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--tls-cert", options.tls.cert_file, "PEM certificate chain: serve TLS")
      ->envname("PRICER_TLS_CERT");
  app.add_option("--tls-key", options.tls.key_file, "PEM private key of --tls-cert")
      ->envname("PRICER_TLS_KEY");
  app.add_option("--tls-client-ca", options.tls.client_ca_file,
                 "PEM CA: require client certificates it signed (mTLS)")
      ->envname("PRICER_TLS_CLIENT_CA");
  app.add_option("--auth-tokens-file", options.auth_tokens_file,
                 "lines `client-name token [max-priority]`: every call but health and reflection "
                 "needs `authorization: Bearer <token>`; the file must not be readable by others")
      ->envname("PRICER_AUTH_TOKENS_FILE");
  app.add_option("--devices", options.devices,
                 "devices to price on: auto, cpu, cpu:K, cuda or cuda:I,J")
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
  app.add_option("--max-jobs-per-client", max_jobs_per_client,
                 "jobs one client may have admitted and not finished (default: a quarter of "
                 "--max-queued-jobs, at least 1)")
      ->envname("PRICER_MAX_JOBS_PER_CLIENT")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-pending-flops-per-client", options.engine.max_pending_flops_per_client,
                 "GEMM flops (2 P N per column) of one client's jobs admitted and not finished; "
                 "0: no limit")
      ->envname("PRICER_MAX_PENDING_FLOPS_PER_CLIENT")
      ->check(CLI::NonNegativeNumber)
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
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->envname("PRICER_LOG_LEVEL")
      ->capture_default_str();
  app.add_option("--log-format", log_format, "text or json (one object per line)")
      ->envname("PRICER_LOG_FORMAT")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (absl::Status s = pricer::ConfigureLogging(log_level, log_format); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 2;
  }
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
  options.engine.max_jobs_per_client =
      max_jobs_per_client > 0 ? max_jobs_per_client
                              : std::max<int64_t>(1, options.engine.max_queued_jobs / 4);

  InstallStopHandlers();
  absl::StatusOr<std::unique_ptr<pricer::PricerServer>> server =
      pricer::PricerServer::Start(options);
  if (!server.ok()) {
    spdlog::error("{}", std::string(server.status().message()));
    return 1;
  }
  std::thread stopper([&] {
    char signal = 0;
    while (true) {
      if (read(signal_pipe[0], &signal, 1) < 0) {
        if (errno == EINTR) continue;
        return;  // the pipe is gone: nothing will stop the server but the process's end
      }
      if (signal != SIGHUP) break;
      spdlog::warn(
          "SIGHUP: nothing is reloaded; TLS certificates and the token file are read at start, "
          "restart pricerd (it drains on SIGTERM) to change them");
    }
    spdlog::info("signal {}: draining for up to {} s (a second signal exits at once)",
                 static_cast<int>(signal), drain_seconds);
    (*server)->Shutdown(drain_seconds);
  });
  (*server)->Wait();
  stopper.join();
  spdlog::info("pricerd stopped");
  return 0;
}
