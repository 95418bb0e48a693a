// pricerd: the pricing server.
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <tuple>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "pricer/version.h"
#include "server/backends/cpu/blas_core.h"
#include "server/backends/device_registry.h"
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

// One malloc arena for the whole process, unless the environment sets the
// number (GLIBC_TUNABLES=glibc.malloc.arena_max=N or MALLOC_ARENA_MAX):
// glibc's malloc_trim returns the free top of the main arena only, so the
// service's idle trim (PricerService::TrimWhenIdle) left the freed result
// buffers of other threads' arenas resident (5 slow readers of 240 MB:
// +29-41% of RSS after they ended; with one arena +1%, at no measured cost
// in throughput on 2 cores).
void UseOneMallocArena() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr ||
      (tunables != nullptr && std::strstr(tunables, "arena_max") != nullptr)) {
    return;
  }
  mallopt(M_ARENA_MAX, 1);
}

// Each connection holds a file descriptor, and the soft limit is often 1024:
// raises it to the hard limit (at most 2^20), saying so.
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t wanted = std::min<rlim_t>(limit.rlim_max, rlim_t{1} << 20);
  if (limit.rlim_cur >= wanted) return;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = wanted;
  if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
    spdlog::info("file descriptors: soft limit raised from {} to {}", before, wanted);
  }
}

// Blocks until a stop signal reaches the pipe (SIGHUP is logged and waited
// past), then drains `server`. Returns without draining when the pipe is gone.
void DrainOnStopSignal(pricer::PricerServer& server, double drain_seconds) {
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
  server.Shutdown(drain_seconds);
}

pricer::ServerOptions DefaultServerOptions() {
  pricer::ServerOptions options;
  options.metrics_listen = "0.0.0.0:9464";
  options.engine.max_pending_flops_per_client = 1e15;
  return options;
}

// The command line as parsed: what ServerOptions holds directly, and the rest
// as given (sizes still text), for ToServerOptions and main.
struct Flags {
  pricer::ServerOptions options = DefaultServerOptions();
  std::string log_level = "info";
  std::string log_format = "text";
  std::string max_request = "64MiB";
  std::string device_memory = "0.5";
  std::string pinned_memory = "0.125";
  std::string max_pending = "1GiB";
  std::string max_pending_per_job = "256MiB";
  std::string store_bytes = "2GiB";
  std::string max_job_memory = "0.25";
  std::string max_upload_in_flight = "2GiB";
  double drain_seconds = 30;
  int64_t max_jobs_per_client = 0;
};

// Where pricerd listens, how it drains and whom it serves.
void DefineServingFlags(CLI::App& app, Flags& flags) {
  pricer::ServerOptions& options = flags.options;
  app.add_option("--listen", options.listen, "host:port to serve gRPC on (port 0: a free one)")
      ->envname("PRICER_LISTEN")
      ->capture_default_str();
  app.add_option("--metrics-listen", options.metrics_listen,
                 "host:port of the Prometheus /metrics endpoint; empty: none")
      ->envname("PRICER_METRICS_LISTEN")
      ->capture_default_str();
  app.add_option("--drain-seconds", flags.drain_seconds,
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
}

// The devices and their memory, and the limits of admission.
void DefineCapacityFlags(CLI::App& app, Flags& flags) {
  pricer::EngineOptions& engine = flags.options.engine;
  app.add_option("--devices", flags.options.devices,
                 "devices to price on: auto, cpu, cpu:K, cuda or cuda:I,J")
      ->envname("PRICER_DEVICES")
      ->capture_default_str();
  app.add_option("--device-memory", flags.device_memory,
                 "memory budget per device: bytes (8GiB) or a fraction of its free memory (0.5)")
      ->envname("PRICER_DEVICE_MEMORY")
      ->capture_default_str();
  app.add_option("--max-request-bytes", flags.max_request, "largest accepted request, e.g. 64MiB")
      ->envname("PRICER_MAX_REQUEST_BYTES")
      ->capture_default_str();
  app.add_option("--max-queued-jobs", engine.max_queued_jobs,
                 "jobs admitted and not finished; more are refused (RESOURCE_EXHAUSTED)")
      ->envname("PRICER_MAX_QUEUED_JOBS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-jobs-per-client", flags.max_jobs_per_client,
                 "jobs one client may have admitted and not finished (default: a quarter of "
                 "--max-queued-jobs, at least 1)")
      ->envname("PRICER_MAX_JOBS_PER_CLIENT")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-pending-flops-per-client", engine.max_pending_flops_per_client,
                 "GEMM flops (2 P N per column) of one client's jobs admitted and not finished; "
                 "0: no limit")
      ->envname("PRICER_MAX_PENDING_FLOPS_PER_CLIENT")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-shards-in-flight", engine.max_shards_in_flight,
                 "most shards one device runs at once (its worker threads)")
      ->envname("PRICER_MAX_SHARDS_IN_FLIGHT")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

// How much host and device memory pricerd's jobs, replies and uploads hold.
void DefineMemoryFlags(CLI::App& app, Flags& flags) {
  app.add_option("--max-job-bytes", flags.max_job_memory,
                 "the most one job may hold on a device: bytes (8GiB) or a fraction of the "
                 "device's budget (0.25); larger jobs are refused (RESOURCE_EXHAUSTED)")
      ->envname("PRICER_MAX_JOB_BYTES")
      ->capture_default_str();
  app.add_option("--pinned-memory", flags.pinned_memory,
                 "page-locked host memory the GPUs stage shards through, all devices together: "
                 "bytes (16GiB) or a fraction of the host's physical memory (0.125); a shard "
                 "waits for it like for device memory")
      ->envname("PRICER_PINNED_MEMORY")
      ->capture_default_str();
  app.add_option("--max-pending-bytes", flags.max_pending,
                 "host memory for result chunks not yet sent, all jobs together")
      ->envname("PRICER_MAX_PENDING_BYTES")
      ->capture_default_str();
  app.add_option("--max-pending-bytes-per-job", flags.max_pending_per_job,
                 "host memory for result chunks not yet sent, per job")
      ->envname("PRICER_MAX_PENDING_BYTES_PER_JOB")
      ->capture_default_str();
  app.add_option("--scenario-store-bytes", flags.store_bytes,
                 "host memory for uploaded scenario sets (least recently used leave first)")
      ->envname("PRICER_SCENARIO_STORE_BYTES")
      ->capture_default_str();
  app.add_option("--scenario-dir", flags.options.scenario_dir,
                 "directory that keeps uploaded scenario sets across restarts")
      ->envname("PRICER_SCENARIO_DIR");
  app.add_option("--max-upload-bytes-in-flight", flags.max_upload_in_flight,
                 "declared bytes of all uploads in progress; more are refused "
                 "(RESOURCE_EXHAUSTED)")
      ->envname("PRICER_MAX_UPLOAD_BYTES_IN_FLIGHT")
      ->capture_default_str();
  app.add_option("--upload-idle-seconds", flags.options.upload_idle_seconds,
                 "end an upload that sends no chunk for this long (DEADLINE_EXCEEDED), freeing "
                 "what it holds; 0: never")
      ->envname("PRICER_UPLOAD_IDLE_SECONDS")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_option("--stalled-reader-seconds", flags.options.stalled_reader_seconds,
                 "cancel a Price call whose reader takes no reply for this long, stopping its "
                 "job; 0: never")
      ->envname("PRICER_STALLED_READER_SECONDS")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_flag("--shared-memory-output", flags.options.shared_memory_output,
               "let clients on this host take full output through a shared-memory ring of "
               "theirs (pricer price --shared-memory), which the server opens as "
               "/proc/PID/fd/FD: for trusted clients of the server's user")
      ->envname("PRICER_SHARED_MEMORY_OUTPUT");
}

// What one connection may hold: calls at once, and how long it may stay
// without completing its handshake or without a call.
void DefineConnectionFlags(CLI::App& app, Flags& flags) {
  pricer::ServerOptions& options = flags.options;
  app.add_option("--handshake-timeout-seconds", options.handshake_timeout_seconds,
                 "close a connection that has not completed its HTTP/2 handshake by then")
      ->envname("PRICER_HANDSHAKE_TIMEOUT_SECONDS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-connection-idle-seconds", options.max_connection_idle_seconds,
                 "ask a connection with no call for this long to go away (HTTP/2 GOAWAY)")
      ->envname("PRICER_MAX_CONNECTION_IDLE_SECONDS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-streams-per-connection", options.max_streams_per_connection,
                 "calls one connection may run at once (HTTP/2 MAX_CONCURRENT_STREAMS)")
      ->envname("PRICER_MAX_STREAMS_PER_CONNECTION")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
}

// Every flag of pricerd, in the order --help lists them.
void DefineFlags(CLI::App& app, Flags& flags) {
  app.set_version_flag(
      "--version", absl::StrCat("pricerd ", pricer::kVersion, " (", pricer::kBuildOptions, ")"));
  DefineServingFlags(app, flags);
  DefineConnectionFlags(app, flags);
  DefineCapacityFlags(app, flags);
  DefineMemoryFlags(app, flags);
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error, critical or off")
      ->envname("PRICER_LOG_LEVEL")
      ->capture_default_str();
  app.add_option("--log-format", flags.log_format, "text or json (one object per line)")
      ->envname("PRICER_LOG_FORMAT")
      ->capture_default_str();
}

// `value`, or its error with the message prefixed by the flag it was read from.
template <typename T>
absl::StatusOr<T> ForFlag(const char* flag, absl::StatusOr<T> value) {
  if (value.ok()) return value;
  return absl::Status(value.status().code(), absl::StrCat(flag, ": ", value.status().message()));
}

// The flags' values as ServerOptions: sizes parsed, and the per-client job
// limit defaulted from --max-queued-jobs. The error names the flag.
absl::StatusOr<pricer::ServerOptions> ToServerOptions(const Flags& flags) {
  pricer::ServerOptions options = flags.options;
  for (auto [flag, text, out] :
       {std::tuple{"--max-request-bytes", &flags.max_request, &options.max_request_bytes},
        std::tuple{"--max-pending-bytes", &flags.max_pending, &options.engine.max_pending_bytes},
        std::tuple{"--max-pending-bytes-per-job", &flags.max_pending_per_job,
                   &options.engine.max_pending_bytes_per_job},
        std::tuple{"--scenario-store-bytes", &flags.store_bytes, &options.scenario_store_bytes},
        std::tuple{"--max-upload-bytes-in-flight", &flags.max_upload_in_flight,
                   &options.max_upload_bytes_in_flight}}) {
    ASSIGN_OR_RETURN(*out, ForFlag(flag, pricer::ParseBytes(*text)));
  }
  ASSIGN_OR_RETURN(options.device_memory,
                   ForFlag("--device-memory", pricer::ParseDeviceMemory(flags.device_memory)));
  ASSIGN_OR_RETURN(options.pinned_memory,
                   ForFlag("--pinned-memory", pricer::ParseDeviceMemory(flags.pinned_memory)));
  ASSIGN_OR_RETURN(const pricer::DeviceMemory job,
                   ForFlag("--max-job-bytes", pricer::ParseDeviceMemory(flags.max_job_memory)));
  options.engine.max_job_bytes = job.bytes;
  options.engine.max_job_fraction = job.bytes > 0 ? 0.0 : job.fraction;
  options.engine.max_jobs_per_client =
      flags.max_jobs_per_client > 0 ? flags.max_jobs_per_client
                                    : std::max<int64_t>(1, options.engine.max_queued_jobs / 4);
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else: it may execute pricerd again (blas_core.h).
  pricer::RunOnTheProcessorsBlasCore(argv);
  UseOneMallocArena();  // before any thread starts
  Flags flags;
  CLI::App app{"pricerd: Monte Carlo scenario pricing over gRPC"};
  DefineFlags(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints its message (or the help, the version: exit 0); its own
    // exit codes (105, 109, ...) are all a usage error here.
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (absl::Status s = pricer::ConfigureLogging(flags.log_level, flags.log_format); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 2;
  }
  absl::StatusOr<pricer::ServerOptions> options = ToServerOptions(flags);
  if (!options.ok()) {
    spdlog::error("{}", std::string(options.status().message()));
    return 2;
  }

  InstallStopHandlers();
  RaiseDescriptorLimit();
  absl::StatusOr<std::unique_ptr<pricer::PricerServer>> server =
      pricer::PricerServer::Start(*options);
  if (!server.ok()) {
    spdlog::error("{}", std::string(server.status().message()));
    // A flag's value or a file it names is a usage error (2), as in
    // ToServerOptions; a port in use or a failed device is not (1).
    const absl::Status& status = server.status();
    return absl::IsInvalidArgument(status) || absl::IsPermissionDenied(status) ? 2 : 1;
  }
  std::thread stopper(DrainOnStopSignal, std::ref(**server), flags.drain_seconds);
  (*server)->Wait();
  stopper.join();
  spdlog::info("pricerd stopped");
  return 0;
}
