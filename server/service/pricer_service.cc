#include "server/service/pricer_service.h"

#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "pricer/version.h"
#include "server/service/logging.h"
#include "server/service/price_reactor.h"
#include "server/service/reply_encoding.h"
#include "server/service/status_mapping.h"
#include "server/service/upload_reactor.h"

namespace pricer {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

IdleWatch::Clock::duration Limit(double seconds) {
  return std::chrono::duration_cast<IdleWatch::Clock::duration>(
      std::chrono::duration<double>(seconds));
}

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
    : engine_(engine),
      store_(store),
      options_(std::move(options)),
      server_id_(ServerId()),
      upload_budget_(options_.max_upload_bytes_in_flight),
      idle_uploads_(Limit(options_.upload_idle_seconds)),
      stalled_readers_(Limit(options_.stalled_reader_seconds)),
      trimmer_([this] { TrimWhenIdle(); }) {}

PricerService::~PricerService() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  trimmer_.join();
}

void PricerService::TrimWhenIdle() {
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(this, &PricerService::IdleAfterWorkOrStopping));
    if (stopping_) return;
    // Idle for a moment, so that a stream of small calls does not trim
    // between calls.
    if (mu_.AwaitWithTimeout(absl::Condition(this, &PricerService::BusyOrStopping),
                             absl::Milliseconds(500))) {
      continue;
    }
    calls_since_trim_ = false;
    mu_.Unlock();
    malloc_trim(0);
    mu_.Lock();
  }
}

grpc::ServerReadReactor<v1::ScenarioChunk>* PricerService::UploadScenarios(
    grpc::CallbackServerContext* context, v1::ScenarioSet* reply) {
  return NewUploadReactor(*this, *context, reply);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* PricerService::Price(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  return NewPriceReactor(*this, *context, *request);
}

grpc::ServerUnaryReactor* PricerService::ListDevices(grpc::CallbackServerContext* context,
                                                     const v1::ListDevicesRequest* /*request*/,
                                                     v1::ListDevicesReply* reply) {
  CallRecord call;
  call.method = "ListDevices";
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<ClientIdentity> client = BeginCall(*context, false, &call);
  if (!client.ok()) {
    call.code = ToGrpcCode(client.status().code());
    EndCall(std::move(call), false);
    reactor->Finish(ToGrpcStatus(client.status()));
    return reactor;
  }
  ToListDevicesReply(engine_.DeviceStatuses(), engine_.Status(), options_.max_queued_jobs, reply);
  reply->set_server_version(absl::StrCat(kVersion, " (", kBuildOptions, ")"));
  reply->set_server_id(server_id_);
  call.bytes = static_cast<int64_t>(reply->ByteSizeLong());
  EndCall(std::move(call), false);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void PricerService::StartDraining() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

int64_t PricerService::active_calls() const {
  absl::MutexLock lock(&mu_);
  return active_calls_;
}

bool PricerService::WaitForCalls(std::chrono::steady_clock::time_point deadline) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(this, &PricerService::NoActiveCalls),
                              absl::FromChrono(deadline - std::chrono::steady_clock::now()));
}

absl::StatusOr<ClientIdentity> PricerService::BeginCall(const grpc::ServerContextBase& context,
                                                        bool drained, CallRecord* call) {
  call->peer = context.peer();
  ASSIGN_OR_RETURN(ClientIdentity client, options_.authenticator.Identify(context));
  call->client = client.name;
  call->client_label = client.label;
  if (!drained) return client;
  absl::MutexLock lock(&mu_);
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
  absl::MutexLock lock(&mu_);
  --active_calls_;
  calls_since_trim_ = true;
}

}  // namespace pricer
