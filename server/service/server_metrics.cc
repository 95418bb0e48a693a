#include "server/service/server_metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "pricer/version.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace pricer {

// Job phases in seconds: from tiny interactive jobs (ms) to overnight batches.
const prometheus::Histogram::BucketBoundaries kSecondsBuckets = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,  1,
    2.5,   5,      10,    30,   60,    120,  300, 600,  1800, 3600};

struct ServerMetrics::Families {
  prometheus::Family<prometheus::Counter>& calls;
  prometheus::Family<prometheus::Counter>& client_calls;
  prometheus::Family<prometheus::Counter>& client_flops;
  prometheus::Family<prometheus::Counter>& streamed_bytes;
  prometheus::Family<prometheus::Counter>& shared_memory_bytes;
  prometheus::Family<prometheus::Counter>& upload_bytes;
  prometheus::Family<prometheus::Histogram>& job_seconds;
};

namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

// A new family at the end of `out`. Families are filled one at a time: `out`
// may reallocate when the next one is added.
MetricFamily* AddFamily(std::vector<MetricFamily>& out, const char* name, const char* help,
                        MetricType type) {
  out.push_back(MetricFamily{name, help, type, {}});
  return &out.back();
}

// One sample of `family` (a counter or a gauge).
void AddSample(MetricFamily* family, std::vector<prometheus::ClientMetric::Label> labels,
               double value) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  if (family->type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family->metric.push_back(std::move(metric));
}

// pricer_device_*, pricer_flops_total and pricer_shards_total, by device.
void AddDeviceFamilies(const std::vector<DeviceStatus>& devices, std::vector<MetricFamily>& out) {
  struct DeviceValue {
    const char* name;
    const char* help;
    MetricType type;
    double (*value)(const DeviceStatus&);
  };
  const DeviceValue per_device[] = {
      {"pricer_device_memory_budget_bytes", "Memory budget of the device, bytes.",
       MetricType::Gauge, [](const DeviceStatus& d) { return double(d.memory_budget_bytes); }},
      {"pricer_device_memory_in_use_bytes", "Device memory the engine holds now, bytes.",
       MetricType::Gauge, [](const DeviceStatus& d) { return double(d.bytes_in_use); }},
      {"pricer_device_memory_peak_bytes", "Most device memory the engine held, bytes.",
       MetricType::Gauge, [](const DeviceStatus& d) { return double(d.peak_bytes); }},
      {"pricer_device_memory_headroom_bytes",
       "Device memory the process holds outside the budget (a GPU's CUDA context and loaded "
       "modules, measured at start), bytes.",
       MetricType::Gauge, [](const DeviceStatus& d) { return double(d.headroom_bytes); }},
      {"pricer_device_memory_idle_bytes",
       "Host memory the device keeps idle for its next shards and jobs, outside in_use, bytes "
       "(a cpu device's ST, A and SC blocks; a GPU's pinned blocks).",
       MetricType::Gauge, [](const DeviceStatus& d) { return double(d.idle_block_bytes); }},
      {"pricer_device_busy_seconds_total", "Time the device ran at least one task, seconds.",
       MetricType::Counter, [](const DeviceStatus& d) { return d.busy_seconds; }},
      {"pricer_flops_total",
       "GEMM floating-point operations of the shards done (2 P N per column).", MetricType::Counter,
       [](const DeviceStatus& d) { return d.flops; }},
      {"pricer_device_lost", "1 when the device was lost and takes no more work.",
       MetricType::Gauge, [](const DeviceStatus& d) { return d.lost.empty() ? 0.0 : 1.0; }},
  };
  for (const DeviceValue& v : per_device) {
    MetricFamily* f = AddFamily(out, v.name, v.help, v.type);
    for (const DeviceStatus& d : devices) AddSample(f, {{"device", d.name}}, v.value(d));
  }
  MetricFamily* shards =
      AddFamily(out, "pricer_shards_total",
                "Shard tasks by device and result: done, failed (then retried elsewhere or fatal), "
                "retried (run here after failing elsewhere).",
                MetricType::Counter);
  for (const DeviceStatus& d : devices) {
    AddSample(shards, {{"device", d.name}, {"result", "done"}}, double(d.shards_done));
    AddSample(shards, {{"device", d.name}, {"result", "failed"}}, double(d.shards_failed));
    AddSample(shards, {{"device", d.name}, {"result", "retried"}}, double(d.shards_retried));
  }
}

// The queue (pricer_jobs, pricer_queue_wait_average_seconds), the unsent
// result chunks and the pinned host memory.
void AddQueueFamilies(const EngineStatus& status, std::vector<MetricFamily>& out) {
  MetricFamily* jobs =
      AddFamily(out, "pricer_jobs",
                "Jobs admitted and not finished: queued (no task started yet) or running.",
                MetricType::Gauge);
  AddSample(jobs, {{"state", "queued"}}, double(status.waiting_jobs));
  AddSample(jobs, {{"state", "running"}}, double(status.queued_jobs - status.waiting_jobs));
  AddSample(AddFamily(out, "pricer_queue_wait_average_seconds",
                      "Average time the jobs now queued have waited so far, seconds (0 when none "
                      "waits): the autoscaling signal.",
                      MetricType::Gauge),
            {}, status.average_wait_seconds);
  AddSample(AddFamily(out, "pricer_pending_chunk_bytes",
                      "Host bytes held for result chunks not yet sent.", MetricType::Gauge),
            {}, double(status.pending_bytes));
  AddSample(AddFamily(out, "pricer_pending_chunk_limit_bytes",
                      "Bound on the host bytes for unsent result chunks (--max-pending-bytes).",
                      MetricType::Gauge),
            {}, double(status.max_pending_bytes));
  AddSample(AddFamily(out, "pricer_pinned_memory_limit_bytes",
                      "Bound on the page-locked host memory for staging shards (--pinned-memory).",
                      MetricType::Gauge),
            {}, double(status.pinned_budget_bytes));
  AddSample(AddFamily(out, "pricer_pinned_memory_in_use_bytes",
                      "Page-locked host memory allocated for staging shards now, bytes.",
                      MetricType::Gauge),
            {}, double(status.pinned_bytes_in_use));
  AddSample(AddFamily(out, "pricer_pinned_memory_peak_bytes",
                      "Most page-locked host memory allocated for staging shards at once, bytes.",
                      MetricType::Gauge),
            {}, double(status.pinned_peak_bytes));
}

}  // namespace

// The engine's and the store's state, read when Prometheus scrapes.
class EngineCollector final : public prometheus::Collectable {
 public:
  EngineCollector(const Engine& engine, const ScenarioStore& store)
      : engine_(engine), store_(store) {}

  std::vector<MetricFamily> Collect() const override {
    std::vector<MetricFamily> out;
    AddDeviceFamilies(engine_.DeviceStatuses(), out);
    AddQueueFamilies(engine_.Status(), out);
    AddSample(AddFamily(out, "pricer_scenario_store_bytes",
                        "Uploaded scenario sets held in memory, bytes.", MetricType::Gauge),
              {}, double(store_.bytes_in_memory()));
    AddSample(AddFamily(out, "pricer_scenario_store_limit_bytes",
                        "Bound on the scenario sets held in memory (--scenario-store-bytes).",
                        MetricType::Gauge),
              {}, double(store_.max_bytes()));
    AddSample(AddFamily(out, "pricer_build_info",
                        "The server's version and build options (always 1).", MetricType::Gauge),
              {{"version", kVersion}, {"build", kBuildOptions}}, 1.0);
    return out;
  }

 private:
  const Engine& engine_;
  const ScenarioStore& store_;
};

namespace {

// civetweb (under prometheus-cpp's Exposer) cannot bind port 0 itself: for
// host:0 this asks the kernel for a free port, then hands it over. (Another
// process may take it in between; port 0 is for tests.)
absl::StatusOr<std::string> WithFreePort(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (listen.substr(colon + 1) != "0") return listen;
  std::string host = listen.substr(0, colon);
  const bool v6 = host.size() >= 2 && host.front() == '[';
  if (v6) host = host.substr(1, host.size() - 2);
  const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  sockaddr_storage address = {};
  socklen_t length = 0;
  bool ok = fd >= 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&address);
    a->sin6_family = AF_INET6;
    ok = ok && inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) == 1;
    length = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&address);
    a->sin_family = AF_INET;
    ok = ok && inet_pton(AF_INET, host.c_str(), &a->sin_addr) == 1;
    length = sizeof(sockaddr_in);
  }
  ok = ok && bind(fd, reinterpret_cast<sockaddr*>(&address), length) == 0 &&
       getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) close(fd);
  if (!ok) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on --metrics-listen ", listen,
                     ": port 0 needs a numeric address of this host (e.g. 127.0.0.1:0)"));
  }
  const int port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  return absl::StrCat(listen.substr(0, colon), ":", port);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServerMetrics>> ServerMetrics::Start(const std::string& listen,
                                                                    const Engine& engine,
                                                                    const ScenarioStore& store) {
  std::unique_ptr<ServerMetrics> metrics(new ServerMetrics());
  metrics->registry_ = std::make_shared<prometheus::Registry>();
  prometheus::Registry& registry = *metrics->registry_;
  metrics->families_.reset(new Families{
      prometheus::BuildCounter()
          .Name("pricer_calls_total")
          .Help("Calls by method and status code, counted when they end.")
          .Register(registry),
      prometheus::BuildCounter()
          .Name("pricer_client_calls_total")
          .Help("Calls by client (names from the token file, else anonymous) and method.")
          .Register(registry),
      prometheus::BuildCounter()
          .Name("pricer_client_flops_total")
          .Help("GEMM flops of the Price calls that ended OK, by client.")
          .Register(registry),
      prometheus::BuildCounter()
          .Name("pricer_streamed_bytes_total")
          .Help("Serialized reply bytes written to callers of Price.")
          .Register(registry),
      prometheus::BuildCounter()
          .Name("pricer_shared_memory_bytes_total")
          .Help("SC bytes written into same-host callers' shared-memory rings.")
          .Register(registry),
      prometheus::BuildCounter()
          .Name("pricer_upload_bytes_total")
          .Help("Scenario matrix bytes received by UploadScenarios.")
          .Register(registry),
      prometheus::BuildHistogram()
          .Name("pricer_job_duration_seconds")
          .Help("Job phases: queued (admission to its first task), running (first task to "
                "the end) and total, seconds.")
          .Register(registry)});
  metrics->families_->streamed_bytes.Add({});
  metrics->families_->shared_memory_bytes.Add({});
  metrics->families_->upload_bytes.Add({});
  for (const char* phase : {"queued", "running", "total"}) {
    metrics->families_->job_seconds.Add({{"phase", phase}}, kSecondsBuckets);
  }
  metrics->collector_ = std::make_shared<EngineCollector>(engine, store);
  ASSIGN_OR_RETURN(const std::string address, WithFreePort(listen));
  try {
    metrics->exposer_ = std::make_unique<prometheus::Exposer>(address, 2);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on --metrics-listen ", address,
        ": the port is in use, or the address is not one of this host's (", e.what(), ")"));
  }
  metrics->exposer_->RegisterCollectable(metrics->registry_);
  metrics->exposer_->RegisterCollectable(metrics->collector_);
  const std::vector<int> ports = metrics->exposer_->GetListeningPorts();
  metrics->port_ = ports.empty() ? 0 : ports.front();
  return metrics;
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::RecordCall(const CallRecord& call) {
  const std::string code = absl::StatusCodeToString(static_cast<absl::StatusCode>(call.code));
  families_->calls.Add({{"method", call.method}, {"code", code}}).Increment();
  const std::string& client = call.client_label.empty() ? "anonymous" : call.client_label;
  families_->client_calls.Add({{"client", client}, {"method", call.method}}).Increment();
  if (call.method == "Price" && call.code == grpc::StatusCode::OK) {
    families_->client_flops.Add({{"client", client}}).Increment(call.flops);
  }
  if (call.bytes_received > 0) {
    families_->upload_bytes.Add({}).Increment(static_cast<double>(call.bytes_received));
  }
}

void ServerMetrics::RecordJob(const JobSummary& summary) {
  if (summary.started) {
    families_->job_seconds.Add({{"phase", "queued"}}, kSecondsBuckets)
        .Observe(summary.queued_seconds);
    families_->job_seconds.Add({{"phase", "running"}}, kSecondsBuckets)
        .Observe(summary.elapsed_seconds - summary.queued_seconds);
  }
  families_->job_seconds.Add({{"phase", "total"}}, kSecondsBuckets)
      .Observe(summary.elapsed_seconds);
}

void ServerMetrics::AddStreamedBytes(int64_t bytes, int64_t shared_memory_bytes) {
  families_->streamed_bytes.Add({}).Increment(static_cast<double>(bytes));
  if (shared_memory_bytes > 0) {
    families_->shared_memory_bytes.Add({}).Increment(static_cast<double>(shared_memory_bytes));
  }
}

}  // namespace pricer
