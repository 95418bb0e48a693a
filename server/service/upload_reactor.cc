#include "server/service/upload_reactor.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/service/reply_encoding.h"
#include "server/service/request_validation.h"
#include "server/service/status_mapping.h"
#include "server/service/upload_assembler.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

// One UploadScenarios call: reads the chunks into one matrix (UploadAssembler:
// each checked against the shape of the first, memory taken as bytes arrive,
// the declared size reserved from the in-flight budget), then stores it on
// the service's upload executor (the check, SHA-256 and disk write of a large
// set must not hold a gRPC thread). The service's idle watch ends the call
// when no chunk arrives for --upload-idle-seconds; finish_mu_ orders its
// time-out against the gRPC threads: Finish once, never while a chunk is
// being taken.
class UploadReactor final : public grpc::ServerReadReactor<v1::ScenarioChunk> {
 public:
  UploadReactor(PricerService& service, const grpc::CallbackServerContext& context,
                v1::ScenarioSet* reply)
      : service_(service),
        store_(service.store()),
        reply_(reply),
        matrix_(service.store().max_bytes(), service.upload_budget()),
        idle_(service.idle_uploads().Watch([this] { TimeOut(); })) {
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
    // Before finish_mu_: a time-out holds the ticket, then takes finish_mu_.
    if (ok) {
      idle_->Touch();
    } else {
      idle_->Close();  // the reads are over
    }
    absl::MutexLock lock(&finish_mu_);
    if (finished_) return;  // timed out: the read failed because the call ended
    if (!ok) {
      Complete();
      return;
    }
    if (absl::Status refused = matrix_.Add(chunk_); !refused.ok()) {
      spdlog::info("refused an upload from {}: {}", call_.peer, std::string(refused.message()));
      FinishLocked(refused);
      return;
    }
    StartRead(&chunk_);
  }

  void OnDone() override {
    idle_->Close();  // waits for a time-out that is running
    CallRecord call;
    {
      // Their last writes were under finish_mu_, on gRPC's or the executor's threads.
      absl::MutexLock lock(&finish_mu_);
      call = std::move(call_);
      call.columns = matrix_.columns();
      call.bytes_received = matrix_.received();
    }
    service_.EndCall(std::move(call), active_);
    delete this;
  }

 private:
  // Finish after finish_mu_ is released: from the executor or the idle
  // watch, Finish is the last touch of the reactor, which OnDone may delete
  // at once.
  void FinishWith(const absl::Status& status) ABSL_LOCKS_EXCLUDED(finish_mu_) {
    {
      absl::MutexLock lock(&finish_mu_);
      if (!MarkFinished(status)) return;
    }
    Finish(ToGrpcStatus(status));
  }

  // In a reaction, which OnDone follows.
  void FinishLocked(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(finish_mu_) {
    if (MarkFinished(status)) Finish(ToGrpcStatus(status));
  }

  // False when the call is already finished. The upload's memory and
  // reservation go before the client hears the status (OnDone, which deletes
  // the reactor, comes after): an upload sent again at once is not refused
  // for the bytes of the one that just ended.
  bool MarkFinished(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(finish_mu_) {
    if (finished_) return false;
    finished_ = true;
    call_.code = ToGrpcCode(status.code());
    matrix_.Drop();
    return true;
  }

  // On the idle watch's thread, a read outstanding.
  void TimeOut() ABSL_LOCKS_EXCLUDED(finish_mu_) {
    const absl::Status idle = absl::DeadlineExceededError(
        absl::StrCat("no chunk arrived for ", service_.options().upload_idle_seconds,
                     " s (--upload-idle-seconds): the upload is dropped; send it again"));
    spdlog::info("ended an upload from {}: {}", call_.peer, std::string(idle.message()));
    FinishWith(idle);
  }

  void Complete() ABSL_EXCLUSIVE_LOCKS_REQUIRED(finish_mu_) {
    if (absl::Status incomplete = matrix_.Complete(); !incomplete.ok()) {
      FinishLocked(incomplete);
      return;
    }
    // Store's Finish is the executor's last touch of the reactor, which
    // OnDone deletes.
    if (!service_.uploads().TrySubmit([this] { FinishWith(Store()); })) {
      FinishLocked(absl::ResourceExhaustedError(
          "too many uploads are being stored on this server at once; retry shortly"));
    }
  }

  absl::Status Store() {
    std::vector<float> values = matrix_.TakeValues();
    RETURN_IF_ERROR(CheckPositions("values", values, matrix_.rows()));
    ASSIGN_OR_RETURN(const StoredSet stored,
                     store_.Put(matrix_.rows(), matrix_.columns(), std::move(values)));
    ToScenarioSetReply(stored, reply_);
    spdlog::info("scenario set {}: {} x {}{}", stored.id, stored.rows, stored.columns,
                 stored.existed ? " (already stored)" : "");
    return absl::OkStatus();
  }

  PricerService& service_;
  ScenarioStore& store_;
  v1::ScenarioSet* reply_;
  v1::ScenarioChunk chunk_;
  UploadAssembler matrix_;  // the matrix as it arrives
  bool active_ = false;     // counted among the active calls
  CallRecord call_;
  std::shared_ptr<IdleWatch::Ticket> idle_;  // of service_.idle_uploads()
  absl::Mutex finish_mu_;
  bool finished_ ABSL_GUARDED_BY(finish_mu_) = false;
};

}  // namespace

grpc::ServerReadReactor<v1::ScenarioChunk>* NewUploadReactor(
    PricerService& service, const grpc::CallbackServerContext& context, v1::ScenarioSet* reply) {
  return new UploadReactor(service, context, reply);
}

}  // namespace pricer
