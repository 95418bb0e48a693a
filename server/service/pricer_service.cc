#include "server/service/pricer_service.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "pricer/version.h"
#include "server/service/logging.h"
#include "server/service/reply_encoding.h"
#include "server/service/request_validation.h"
#include "server/service/status_mapping.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One Price call: writes `accepted`, then each chunk as the engine queues it,
// then `finished`. The engine's threads wake it through the stream listener;
// gRPC's threads continue it from OnWriteDone. Lock order: reactor, stream.
class PriceReactor final : public grpc::ServerWriteReactor<v1::PriceReply> {
 public:
  PriceReactor(PricerService& service, const grpc::CallbackServerContext& context,
               const v1::PriceRequest& request)
      : service_(service) {
    call_.method = "Price";
    absl::StatusOr<ClientIdentity> client = service.BeginCall(context, true, &call_);
    if (!client.ok()) {
      FinishBefore(client.status());
      return;
    }
    active_ = true;
    const int64_t request_bytes = static_cast<int64_t>(request.ByteSizeLong());
    const int64_t max_request_bytes = service.options().max_request_bytes;
    if (request_bytes > max_request_bytes) {
      FinishBefore(absl::ResourceExhaustedError(
          absl::StrCat("the request has ", request_bytes, " bytes, over this server's limit of ",
                       max_request_bytes,
                       " bytes (--max-request-bytes); upload a large scenario matrix with "
                       "UploadScenarios (pricer upload) and name it in scenarios.scenario_set")));
      return;
    }
    absl::StatusOr<JobSpec> spec = ToJobSpec(request, service.store());
    if (!spec.ok()) {
      FinishBefore(spec.status());
      return;
    }
    if (spec->priority > client->max_priority) {
      FinishBefore(absl::PermissionDeniedError(
          absl::StrCat("priority is ", spec->priority, ": client ", client->name,
                       " may ask for at most ", client->max_priority,
                       service.options().authenticator.enabled()
                           ? " (its max-priority in --auth-tokens-file)"
                           : " (a server without --auth-tokens-file gives every client 0)")));
      return;
    }
    spec->client = client->name;
    // The call's deadline also stops the engine's work on it.
    const auto deadline = context.deadline();
    if (deadline != std::chrono::system_clock::time_point::max()) {
      spec->deadline = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           deadline - std::chrono::system_clock::now());
    }
    absl::StatusOr<std::shared_ptr<Job>> job = service.engine().Submit(*std::move(spec));
    if (!job.ok()) {
      FinishBefore(job.status());
      return;
    }
    job_ = *std::move(job);
    call_.job = job_->id();
    call_.columns = job_->spec().column_end - job_->spec().column_begin;
    const ShardPlan& plan = job_->plan();
    spdlog::info("{}: client {}, {} issuers, {} paths, columns [{}, {}), {} shards of {} columns",
                 job_->id(), call_.client, job_->spec().market.issuers(), job_->spec().paths,
                 job_->spec().column_begin, job_->spec().column_end, plan.shard_count,
                 plan.shard_columns);

    // `accepted` goes first, once the job's inputs are ready (after its
    // preparation): a request its preparation refuses gets no reply.
    job_->results().SetListener([this] { WriteNext(); });
    WriteNext();
  }

  void OnWriteDone(bool ok) override {
    int64_t sent = 0;
    int64_t reply_bytes = 0;
    {
      std::lock_guard lock(mu_);
      writing_ = false;
      sent = std::exchange(bytes_in_flight_, 0);
      reply_bytes = std::exchange(reply_bytes_in_flight_, 0);
      if (ok) call_.bytes += reply_bytes;
    }
    if (sent > 0) job_->results().Release(sent);
    if (!ok) {
      // The stream broke (the client went away); stop the job.
      job_->Cancel(absl::CancelledError("the reply stream broke"));
      FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "the reply stream broke"));
      return;
    }
    if (ServerMetrics* metrics = service_.options().metrics) metrics->AddStreamedBytes(reply_bytes);
    WriteNext();
  }

  void OnCancel() override {
    cancelled_ = true;
    if (job_ != nullptr) job_->Cancel(absl::CancelledError("the client cancelled the call"));
  }

  void OnDone() override {
    if (job_ != nullptr) {
      job_->results().DetachListener();
      job_->Cancel(absl::CancelledError("the call ended"));  // no-op once finished
      const JobSummary summary = job_->Summary();
      call_.flops = summary.flops;
      if (ServerMetrics* metrics = service_.options().metrics) metrics->RecordJob(summary);
    }
    // A caller that cancelled or went away: its call ends CANCELLED, whatever
    // the server last tried to send.
    if (cancelled_) call_.code = grpc::StatusCode::CANCELLED;
    service_.EndCall(std::move(call_), active_);
    delete this;
  }

 private:
  // Refuses the call before any job exists.
  void FinishBefore(const absl::Status& status) {
    call_.code = static_cast<grpc::StatusCode>(status.code());
    if (status.code() != absl::StatusCode::kUnauthenticated &&
        status.code() != absl::StatusCode::kUnavailable) {
      spdlog::info("refused a price request from {}: {}", call_.peer,
                   std::string(status.message()));
    }
    Finish(ToGrpcStatus(status));
  }

  // Starts the next write, if none is in flight: `accepted`, the chunks,
  // `finished`; or finishes the call when the stream is drained.
  void WriteNext() {
    std::unique_lock lock(mu_);
    if (writing_ || finished_) return;
    absl::Status status;
    if (!accepted_sent_ && job_->results().ready()) {
      ToAcceptedReply(*job_, &reply_);
      accepted_sent_ = true;
    } else if (std::optional<ResultChunk> chunk;
               accepted_sent_ && (chunk = job_->results().Pop()).has_value()) {
      ToReply(*chunk, job_->spec().output.statistics, &reply_);
      bytes_in_flight_ = chunk->payload_bytes();
    } else if (!job_->results().Drained(&status)) {
      return;
    } else if (status.ok() && !finished_sent_) {
      const JobSummary summary = job_->Summary();
      ToFinishedReply(summary, &reply_);
      finished_sent_ = true;
      spdlog::info("{}: finished in {:.3f} s, {:.1f} GFLOP/s", job_->id(), summary.elapsed_seconds,
                   summary.flops / summary.elapsed_seconds / 1e9);
    } else {
      finished_ = true;
      call_.code = static_cast<grpc::StatusCode>(status.code());
      lock.unlock();
      Finish(ToGrpcStatus(status));
      return;
    }
    reply_bytes_in_flight_ = static_cast<int64_t>(reply_.ByteSizeLong());
    writing_ = true;
    lock.unlock();
    StartWrite(&reply_);
  }

  void FinishOnce(const grpc::Status& status) {
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      finished_ = true;
      call_.code = status.error_code();
    }
    Finish(status);
  }

  PricerService& service_;
  bool active_ = false;  // counted among the active calls (not refused)
  std::atomic<bool> cancelled_{false};
  std::shared_ptr<Job> job_;
  std::mutex mu_;
  CallRecord call_;                    // code and bytes guarded by mu_ once streaming
  v1::PriceReply reply_;               // the message being written
  int64_t bytes_in_flight_ = 0;        // payload of the chunk being written
  int64_t reply_bytes_in_flight_ = 0;  // its serialized size
  bool writing_ = false;
  bool accepted_sent_ = false;
  bool finished_sent_ = false;
  bool finished_ = false;
};

// One UploadScenarios call: reads the chunks into one matrix, checking each
// against the shape of the first, then stores it on a thread of its own (the
// SHA-256 and the disk write of a large set must not hold a gRPC thread).
class UploadReactor final : public grpc::ServerReadReactor<v1::ScenarioChunk> {
 public:
  UploadReactor(PricerService& service, const grpc::CallbackServerContext& context,
                v1::ScenarioSet* reply)
      : service_(service), store_(service.store()), reply_(reply) {
    call_.method = "UploadScenarios";
    absl::StatusOr<ClientIdentity> client = service.BeginCall(context, true, &call_);
    if (!client.ok()) {
      FinishWith(client.status());
      return;
    }
    active_ = true;
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Complete();
      return;
    }
    if (absl::Status s = Take(); !s.ok()) {
      spdlog::info("refused an upload from {}: {}", call_.peer, std::string(s.message()));
      FinishWith(s);
      return;
    }
    StartRead(&chunk_);
  }

  void OnDone() override {
    call_.columns = columns_;
    call_.bytes_received = received_;
    service_.EndCall(std::move(call_), active_);
    delete this;
  }

 private:
  // Appends one chunk, or says why the upload is refused.
  absl::Status Take() {
    if (rows_ == 0) {
      if (chunk_.rows() < 1 || chunk_.rows() > kMaxIssuers) {
        return absl::InvalidArgumentError(absl::StrCat("the first chunk's rows is ", chunk_.rows(),
                                                       ": must be in [1, ", kMaxIssuers, "]"));
      }
      if (chunk_.columns() < 1 || chunk_.columns() > kMaxScenarioColumns) {
        return absl::InvalidArgumentError(absl::StrCat("the first chunk's columns is ",
                                                       chunk_.columns(), ": must be in [1, ",
                                                       kMaxScenarioColumns, "]"));
      }
      rows_ = chunk_.rows();
      columns_ = chunk_.columns();
      expected_ = rows_ * columns_ * static_cast<int64_t>(sizeof(float));
      if (expected_ > store_.max_bytes()) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the set has ", expected_, " bytes, over the server's --scenario-store-bytes of ",
            store_.max_bytes()));
      }
      values_.resize(static_cast<size_t>(rows_ * columns_));
    } else if ((chunk_.rows() != 0 && chunk_.rows() != rows_) ||
               (chunk_.columns() != 0 && chunk_.columns() != columns_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("inconsistent upload: a chunk says ", chunk_.rows(), " x ", chunk_.columns(),
                       " after the first said ", rows_, " x ", columns_));
    }
    if (received_ + static_cast<int64_t>(chunk_.values().size()) > expected_) {
      return absl::InvalidArgumentError(absl::StrCat("inconsistent upload: more than the ",
                                                     expected_, " bytes of a ", rows_, " x ",
                                                     columns_, " float32 matrix"));
    }
    std::memcpy(reinterpret_cast<char*>(values_.data()) + received_, chunk_.values().data(),
                chunk_.values().size());
    received_ += static_cast<int64_t>(chunk_.values().size());
    return absl::OkStatus();
  }

  void FinishWith(const absl::Status& status) {
    call_.code = static_cast<grpc::StatusCode>(status.code());
    Finish(ToGrpcStatus(status));
  }

  void Complete() {
    if (rows_ == 0) {
      FinishWith(absl::InvalidArgumentError("empty upload: no chunk arrived"));
      return;
    }
    if (received_ != expected_) {
      FinishWith(absl::InvalidArgumentError(
          absl::StrCat("truncated upload: ", received_, " of the ", expected_, " bytes of a ",
                       rows_, " x ", columns_, " float32 matrix arrived; nothing was stored")));
      return;
    }
    // Finish is the thread's last touch of the reactor, which OnDone deletes.
    std::thread([this] {
      absl::Status status = CheckPositions("values", values_, rows_);
      if (status.ok()) {
        absl::StatusOr<StoredSet> stored = store_.Put(rows_, columns_, std::move(values_));
        status = stored.status();
        if (stored.ok()) {
          reply_->set_id(stored->id);
          reply_->set_rows(stored->rows);
          reply_->set_columns(stored->columns);
          reply_->set_bytes(stored->bytes);
          reply_->set_existed(stored->existed);
          spdlog::info("scenario set {}: {} x {}{}", stored->id, stored->rows, stored->columns,
                       stored->existed ? " (already stored)" : "");
        }
      }
      FinishWith(status);
    }).detach();
  }

  PricerService& service_;
  ScenarioStore& store_;
  v1::ScenarioSet* reply_;
  v1::ScenarioChunk chunk_;
  int64_t rows_ = 0;
  int64_t columns_ = 0;
  int64_t expected_ = 0;
  std::vector<float> values_;  // the matrix as it arrives
  int64_t received_ = 0;       // bytes of it so far
  bool active_ = false;        // counted among the active calls
  CallRecord call_;
};

}  // namespace

namespace {

// Host name, process id and start time (ms since the epoch).
std::string ServerId() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "unknown");
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return absl::StrCat(host, ":", getpid(), ":",
                      std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}

}  // namespace

PricerService::PricerService(Engine& engine, ScenarioStore& store, ServiceOptions options)
    : engine_(engine), store_(store), options_(std::move(options)), server_id_(ServerId()) {}

grpc::ServerReadReactor<v1::ScenarioChunk>* PricerService::UploadScenarios(
    grpc::CallbackServerContext* context, v1::ScenarioSet* reply) {
  return new UploadReactor(*this, *context, reply);
}

grpc::ServerWriteReactor<v1::PriceReply>* PricerService::Price(grpc::CallbackServerContext* context,
                                                               const v1::PriceRequest* request) {
  return new PriceReactor(*this, *context, *request);
}

grpc::ServerUnaryReactor* PricerService::ListDevices(grpc::CallbackServerContext* context,
                                                     const v1::ListDevicesRequest* /*request*/,
                                                     v1::ListDevicesReply* reply) {
  CallRecord call;
  call.method = "ListDevices";
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<ClientIdentity> client = BeginCall(*context, false, &call);
  if (!client.ok()) {
    call.code = static_cast<grpc::StatusCode>(client.status().code());
    EndCall(std::move(call), false);
    reactor->Finish(ToGrpcStatus(client.status()));
    return reactor;
  }
  for (const DeviceStatus& status : engine_.DeviceStatuses()) {
    v1::DeviceInfo* info = reply->add_devices();
    info->set_name(status.name);
    info->set_kind(status.kind);
    info->set_memory_budget_bytes(status.memory_budget_bytes);
    info->set_bytes_in_use(status.bytes_in_use);
    info->set_peak_bytes(status.peak_bytes);
    info->set_shards_done(status.shards_done);
    info->set_busy_seconds(status.busy_seconds);
    info->set_lost(status.lost);
  }
  const EngineStatus engine = engine_.Status();
  reply->set_queued_jobs(engine.queued_jobs);
  reply->set_max_queued_jobs(options_.max_queued_jobs);
  reply->set_pending_bytes(engine.pending_bytes);
  reply->set_max_pending_bytes(engine.max_pending_bytes);
  reply->set_server_version(absl::StrCat(kVersion, " (", kBuildOptions, ")"));
  reply->set_server_id(server_id_);
  call.bytes = static_cast<int64_t>(reply->ByteSizeLong());
  EndCall(std::move(call), false);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void PricerService::StartDraining() {
  std::lock_guard lock(mu_);
  draining_ = true;
}

int64_t PricerService::active_calls() const {
  std::lock_guard lock(mu_);
  return active_calls_;
}

bool PricerService::WaitForCalls(std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  return calls_ended_.wait_until(lock, deadline, [&] { return active_calls_ == 0; });
}

absl::StatusOr<ClientIdentity> PricerService::BeginCall(const grpc::ServerContextBase& context,
                                                        bool drained, CallRecord* call) {
  call->peer = context.peer();
  absl::StatusOr<ClientIdentity> client = options_.authenticator.Identify(context);
  if (!client.ok()) return client.status();
  call->client = client->name;
  call->client_label = client->label;
  if (!drained) return client;
  std::lock_guard lock(mu_);
  if (draining_) {
    return absl::UnavailableError(
        "the server is draining (shutting down); send the call to another server");
  }
  ++active_calls_;
  return client;
}

void PricerService::EndCall(CallRecord call, bool active) {
  call.seconds = SecondsSince(call.start);
  LogCall(call);
  if (options_.metrics != nullptr) options_.metrics->RecordCall(call);
  if (!active) return;
  {
    std::lock_guard lock(mu_);
    --active_calls_;
  }
  calls_ended_.notify_all();
}

}  // namespace pricer
