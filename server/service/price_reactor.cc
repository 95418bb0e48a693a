#include "server/service/price_reactor.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/service/reply_encoding.h"
#include "server/service/request_validation.h"
#include "server/service/shared_output.h"
#include "server/service/status_mapping.h"
#include "server/service/targeted_run.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

// One Price call: writes `accepted`, then each chunk as the engine queues it,
// then `finished`. The engine's threads wake it through the stream listener;
// gRPC's threads continue it from OnWriteDone. Lock order: reactor, stream.
class PriceReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  PriceReactor(PricerService& service, grpc::CallbackServerContext& context,
               const grpc::ByteBuffer& request)
      : service_(service),
        context_(context),
        stalled_(service.stalled_readers().Watch([this] { CancelStalled(); })) {
    stalled_->Pause();  // nothing is being written yet
    call_.method = "Price";
    absl::StatusOr<ClientIdentity> client = service.BeginCall(context, true, &call_);
    if (!client.ok()) {
      FinishBefore(client.status());
      return;
    }
    active_ = true;
    absl::StatusOr<std::shared_ptr<PriceRun>> run = Submit(context, request, *client);
    if (!run.ok()) {
      FinishBefore(run.status());
      return;
    }
    run_ = *std::move(run);
    call_.job = run_->job().id();
    call_.columns = run_->job().spec().column_end - run_->job().spec().column_begin;
    const ShardPlan& plan = run_->job().plan();
    const JobSpec& spec = run_->job().spec();
    spdlog::info(
        "{}: client {}, {} issuers{}{}, {} paths, columns [{}, {}), {} shards of {} columns",
        run_->job().id(), call_.client, spec.market.issuers(),
        spec.instruments.empty() ? "" : absl::StrCat(", ", spec.instruments.size(), " instruments"),
        spec.historical() ? " (historical returns)" : "", spec.paths, spec.column_begin,
        spec.column_end, plan.shard_count, plan.shard_columns);
    // `accepted` goes first, once the job's inputs are ready (after its
    // preparation): a request its preparation refuses gets no reply.
    run_->results().SetListener([this] { WriteNext(); });
    WriteNext();
  }

  void OnWriteDone(bool ok) override {
    stalled_->Pause();
    int64_t sent = 0;
    int64_t reply_bytes = 0;
    int64_t shared_bytes = 0;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      sent = std::exchange(bytes_in_flight_, 0);
      reply_bytes = std::exchange(reply_bytes_in_flight_, 0);
      shared_bytes = std::exchange(shared_bytes_in_flight_, 0);
      if (ok) call_.bytes += reply_bytes;
    }
    if (sent > 0) run_->results().Release(sent);
    if (!ok) {
      // The stream broke (the client went away); stop the job.
      run_->Cancel(absl::CancelledError("the reply stream broke"));
      FinishOnce(absl::CancelledError("the reply stream broke"));
      return;
    }
    if (ServerMetrics* metrics = service_.options().metrics) {
      metrics->AddStreamedBytes(reply_bytes, shared_bytes);
    }
    WriteNext();
  }

  void OnCancel() override {
    cancelled_ = true;
    if (run_ == nullptr) return;
    run_->Cancel(absl::CancelledError("the client cancelled the call"));
    WriteNext();  // with no write to fail (a chunk waiting for the ring), finishes
  }

  void OnDone() override {
    stalled_->Close();  // waits for a time-out that is running
    shared_.reset();    // waits for a WriteNext that its thread runs
    double flops = 0;
    if (run_ != nullptr) {
      run_->results().DetachListener();
      run_->Cancel(absl::CancelledError("the call ended"));  // no-op once finished
      const JobSummary summary = run_->Summary();
      flops = summary.flops;
      if (ServerMetrics* metrics = service_.options().metrics) metrics->RecordJob(summary);
    }
    CallRecord call;
    {
      // Its last writes were under mu_, on the engine's or gRPC's threads.
      absl::MutexLock lock(&mu_);
      call = std::move(call_);
    }
    call.flops = flops;
    // A caller that cancelled or went away: its call ends CANCELLED, whatever
    // the server last tried to send.
    if (cancelled_) call.code = grpc::StatusCode::CANCELLED;
    service_.EndCall(std::move(call), active_);
    delete this;
  }

 private:
  // Checks the request, and submits its job (the first round's, with a target).
  absl::StatusOr<std::shared_ptr<PriceRun>> Submit(const grpc::CallbackServerContext& context,
                                                   const grpc::ByteBuffer& serialized,
                                                   const ClientIdentity& client) {
    const int64_t request_bytes = static_cast<int64_t>(serialized.Length());
    const int64_t max_request_bytes = service_.options().max_request_bytes;
    if (request_bytes > max_request_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the request has ", request_bytes, " bytes, over this server's limit of ",
                       max_request_bytes,
                       " bytes (--max-request-bytes); upload a large scenario matrix with "
                       "UploadScenarios (pricer upload) and name it in scenarios.scenario_set"));
    }
    v1::PriceRequest request;
    grpc::ByteBuffer bytes(serialized);  // Deserialize consumes its buffer
    if (!grpc::SerializationTraits<v1::PriceRequest>::Deserialize(&bytes, &request).ok()) {
      return absl::InvalidArgumentError("the request does not parse as a pricer.v1.PriceRequest");
    }
    ASSIGN_OR_RETURN(JobSpec spec, ToJobSpec(request, service_.store()));
    ASSIGN_OR_RETURN(shared_,
                     OpenRequestedRing(request.output(), service_.options().shared_memory_output));
    if (spec.priority > client.max_priority) {
      return absl::PermissionDeniedError(
          absl::StrCat("priority is ", spec.priority, ": client ", client.name,
                       " may ask for at most ", client.max_priority,
                       service_.options().authenticator.enabled()
                           ? " (its max-priority in --auth-tokens-file)"
                           : " (a server without --auth-tokens-file gives every client 0)"));
    }
    spec.client = client.name;
    // The call's deadline also stops the engine's work on it.
    const auto deadline = context.deadline();
    if (deadline != std::chrono::system_clock::time_point::max()) {
      spec.deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          deadline - std::chrono::system_clock::now());
    }
    if (spec.target.any()) return TargetedRun::Start(service_.engine(), std::move(spec));
    ASSIGN_OR_RETURN(std::shared_ptr<Job> job, service_.engine().Submit(std::move(spec)));
    return std::make_shared<JobRun>(std::move(job));
  }

  // Refuses the call before any job exists.
  void FinishBefore(const absl::Status& status) {
    call_.code = ToGrpcCode(status.code());
    if (status.code() != absl::StatusCode::kUnauthenticated &&
        status.code() != absl::StatusCode::kUnavailable) {
      spdlog::info("refused a price request from {}: {}", call_.peer,
                   std::string(status.message()));
    }
    AddFieldTrailer(status, context_);
    Finish(ToGrpcStatus(status));
  }

  // Starts the next write, if none is in flight: `accepted`, the chunks,
  // `finished`; or finishes the call when the stream is drained.
  void WriteNext() ABSL_LOCKS_EXCLUDED(mu_) {
    mu_.Lock();
    if (writing_ || finished_) {
      mu_.Unlock();
      return;
    }
    absl::Status status;
    v1::PriceReply message;
    int64_t shared_bytes = 0;  // values written into the shared-memory ring
    if (!accepted_sent_ && run_->results().ready()) {
      ToAcceptedReply(run_->job(), &message);
      reply_ = EncodeReply(message);
      accepted_sent_ = true;
    } else if (accepted_sent_ && (held_.has_value() || (held_ = run_->results().Pop()))) {
      const HeldChunk held = TakeHeld();
      if (!held.ready) {
        mu_.Unlock();  // the stream's calls may call WriteNext
        if (held.dropped_bytes > 0) run_->results().Release(held.dropped_bytes);
        if (!held.failed.ok()) run_->Cancel(held.failed);
        if (cancelled_) WriteNext();  // finishes once the stream is drained
        return;
      }
      shared_bytes = held.shared_bytes;
    } else if (!run_->results().Drained(&status)) {
      mu_.Unlock();
      return;
    } else if (status.ok() && !finished_sent_) {
      const JobSummary summary = run_->Summary();
      ToFinishedReply(summary, &message);
      reply_ = EncodeReply(message);
      finished_sent_ = true;
      spdlog::info("{}: finished in {:.3f} s, {:.1f} GFLOP/s", run_->job().id(),
                   summary.elapsed_seconds, summary.flops / summary.elapsed_seconds / 1e9);
    } else {
      finished_ = true;
      call_.code = ToGrpcCode(status.code());
      mu_.Unlock();
      Finish(ToGrpcStatus(status));
      return;
    }
    reply_bytes_in_flight_ = static_cast<int64_t>(reply_.Length());
    shared_bytes_in_flight_ = shared_bytes;
    writing_ = true;
    stalled_->Touch();
    mu_.Unlock();
    StartWrite(&reply_);
  }

  // What TakeHeld did with the held chunk.
  struct HeldChunk {
    bool ready = false;         // its reply is in reply_
    int64_t shared_bytes = 0;   // its values written into the ring
    int64_t dropped_bytes = 0;  // pending bytes of the chunks dropped, to release
    absl::Status failed;        // the ring failed
  };

  // The reply for the held chunk into reply_ (ready). Not ready when it
  // cannot be written now: it waits for a slot of the ring (whose thread
  // calls WriteNext when one is free; its reader held to
  // --stalled-reader-seconds as for a write), or the call was cancelled (the
  // chunks left are dropped), or the ring failed.
  HeldChunk TakeHeld() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    HeldChunk out;
    if (cancelled_) {
      for (; held_.has_value(); held_ = run_->results().Pop()) {
        out.dropped_bytes += held_->payload_bytes();
      }
      return out;
    }
    const int64_t payload_bytes = held_->payload_bytes();
    int32_t slot = 0;
    if (shared_ != nullptr && held_->kind == ResultChunk::Kind::kScenarioColumns &&
        !held_->values.empty()) {
      absl::StatusOr<int32_t> written =
          shared_->TryWrite(held_->values, held_->rows, held_->begin, [this] { WriteNext(); });
      if (!written.ok()) {
        out.dropped_bytes = payload_bytes;
        held_.reset();
        out.failed = written.status();
        return out;
      }
      if (*written == 0) {
        // The reader's time starts with the wait, not with each new chunk.
        if (!waiting_for_slot_) stalled_->Touch();
        waiting_for_slot_ = true;
        return out;
      }
      waiting_for_slot_ = false;
      slot = *written;
      out.shared_bytes = static_cast<int64_t>(held_->values.size() * sizeof(float));
      held_->values = SharedFloats();
    }
    reply_ = EncodeReply(*held_, run_->job().spec().output.statistics, slot);
    bytes_in_flight_ = payload_bytes;
    held_.reset();
    out.ready = true;
    return out;
  }

  // On the stalled-reader watch's thread, a write outstanding for longer
  // than --stalled-reader-seconds: the reader has taken nothing for that
  // long. Its job stops and the call is cancelled (the write cannot drain,
  // so no status could follow it).
  void CancelStalled() {
    const std::string why =
        absl::StrCat("the reader took no reply for ", service_.options().stalled_reader_seconds,
                     " s (--stalled-reader-seconds)");
    spdlog::info("{}: cancelled: {}", call_.job, why);
    run_->Cancel(absl::CancelledError(why));
    context_.TryCancel();
  }

  void FinishOnce(const absl::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
      finished_ = true;
      call_.code = ToGrpcCode(status.code());
    }
    Finish(ToGrpcStatus(status));
  }

  PricerService& service_;
  grpc::CallbackServerContext& context_;
  std::shared_ptr<IdleWatch::Ticket> stalled_;  // of service_.stalled_readers()
  bool active_ = false;                         // counted among the active calls (not refused)
  std::atomic<bool> cancelled_{false};
  std::shared_ptr<PriceRun> run_;
  // The request's shared-memory ring (output.shared_memory), if any.
  std::unique_ptr<SharedOutputWriter> shared_;
  absl::Mutex mu_;
  // Its code and bytes are written under mu_ once the call streams, on the
  // engine's and gRPC's threads; OnDone takes it under mu_.
  CallRecord call_;
  grpc::ByteBuffer reply_ ABSL_GUARDED_BY(mu_);  // the message being written
  // A chunk popped from the stream that waits for a slot of the ring.
  std::optional<ResultChunk> held_ ABSL_GUARDED_BY(mu_);
  bool waiting_for_slot_ ABSL_GUARDED_BY(mu_) = false;       // held_ waits for the ring
  int64_t bytes_in_flight_ ABSL_GUARDED_BY(mu_) = 0;         // payload of the chunk being written
  int64_t reply_bytes_in_flight_ ABSL_GUARDED_BY(mu_) = 0;   // its serialized size
  int64_t shared_bytes_in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // its values in the ring
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool accepted_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* NewPriceReactor(PricerService& service,
                                                            grpc::CallbackServerContext& context,
                                                            const grpc::ByteBuffer& request) {
  return new PriceReactor(service, context, request);
}

}  // namespace pricer
