// Prometheus metrics on /metrics (prometheus-cpp), names pricer_* with their
// unit. Events (calls, jobs, bytes streamed) are counted as they happen; the
// engine's and the store's state (devices, queue, memory) is read at each
// scrape. Labels are bounded: method and code, device names, and client
// names from the token file ("anonymous" for everyone else).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/scheduler/engine.h"
#include "server/service/call_record.h"
#include "server/store/scenario_store.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace pricer {

class EngineCollector;

class ServerMetrics {
 public:
  // Serves http://<listen>/metrics (host:port; port 0 picks a free one).
  // UNAVAILABLE naming the address when it cannot bind. `engine` and
  // `store` must outlive the returned object.
  static absl::StatusOr<std::unique_ptr<ServerMetrics>> Start(const std::string& listen,
                                                              const Engine& engine,
                                                              const ScenarioStore& store);
  ~ServerMetrics();

  int port() const { return port_; }

  // pricer_calls_total, pricer_client_calls_total, pricer_client_flops_total
  // (OK Price calls) and pricer_upload_bytes_total.
  void RecordCall(const CallRecord& call);
  // pricer_job_duration_seconds{phase}: queued, running, total.
  void RecordJob(const JobSummary& summary);
  // pricer_streamed_bytes_total: reply bytes written to callers; and
  // pricer_shared_memory_bytes_total: SC bytes put in their rings.
  void AddStreamedBytes(int64_t bytes, int64_t shared_memory_bytes = 0);

 private:
  struct Families;
  ServerMetrics() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::shared_ptr<EngineCollector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace pricer
