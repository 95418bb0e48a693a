// The gRPC face of the engine: authenticates callers, validates requests,
// submits jobs and streams their chunks back (callback API, one write in
// flight per call); each call ends with an access line and its metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "pricer/v1/pricer.grpc.pb.h"
#include "server/scheduler/engine.h"
#include "server/service/auth.h"
#include "server/service/bounded_executor.h"
#include "server/service/call_record.h"
#include "server/service/idle_watch.h"
#include "server/service/server_metrics.h"
#include "server/service/upload_assembler.h"
#include "server/store/scenario_store.h"

namespace pricer {

struct ServiceOptions {
  // A larger request is refused with RESOURCE_EXHAUSTED.
  int64_t max_request_bytes = 64LL << 20;
  // Reported by ListDevices (the engine enforces it).
  int64_t max_queued_jobs = 64;
  // Who may call (default: everyone, anonymously).
  Authenticator authenticator;
  // Where calls are counted; none when null.
  ServerMetrics* metrics = nullptr;
  // The declared bytes of all uploads in progress (--max-upload-bytes-in-flight).
  int64_t max_upload_bytes_in_flight = 2LL << 30;
  // An upload with no chunk for this long is ended (--upload-idle-seconds);
  // 0: never.
  double upload_idle_seconds = 60;
  // A Price call whose reader takes no reply for this long is cancelled
  // (--stalled-reader-seconds); 0: never.
  double stalled_reader_seconds = 300;
  // Clients on this host may take full output through a shared-memory ring
  // (output.shared_memory, --shared-memory-output).
  bool shared_memory_output = false;
};

// Price is a raw method (its replies are written serialized, reply_encoding.h).
class PricerService final
    : public v1::Pricer::WithRawCallbackMethod_Price<v1::Pricer::CallbackService> {
 public:
  // `store` holds the uploaded scenario sets.
  PricerService(Engine& engine, ScenarioStore& store, ServiceOptions options);
  ~PricerService();

  using WithRawCallbackMethod_Price::Price;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Price(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* context,
                                        const v1::ListDevicesRequest* request,
                                        v1::ListDevicesReply* reply) override;
  grpc::ServerReadReactor<v1::ScenarioChunk>* UploadScenarios(grpc::CallbackServerContext* context,
                                                              v1::ScenarioSet* reply) override;

  // From now on Price and UploadScenarios calls are refused with UNAVAILABLE.
  void StartDraining();
  // Price and UploadScenarios calls not yet ended.
  int64_t active_calls() const;
  // Waits until no such call is left or `deadline` passes; whether none is.
  bool WaitForCalls(std::chrono::steady_clock::time_point deadline) const;

  // For the calls: who calls (into `call`; UNAUTHENTICATED for a missing
  // or unknown token) and, for a call that a drain refuses (Price,
  // UploadScenarios: `drained`), UNAVAILABLE while draining; otherwise such a
  // call counts among the active ones until EndCall.
  absl::StatusOr<ClientIdentity> BeginCall(const grpc::ServerContextBase& context, bool drained,
                                           CallRecord* call);
  // Logs and counts the call; `active`: BeginCall counted it.
  void EndCall(CallRecord call, bool active);
  Engine& engine() { return engine_; }
  ScenarioStore& store() { return store_; }
  BoundedExecutor& uploads() { return uploads_; }
  MemoryAccount& upload_budget() { return upload_budget_; }
  IdleWatch& idle_uploads() { return idle_uploads_; }
  IdleWatch& stalled_readers() { return stalled_readers_; }
  const ServiceOptions& options() const { return options_; }

 private:
  Engine& engine_;
  ScenarioStore& store_;
  const ServiceOptions options_;
  const std::string server_id_;  // ListDevicesReply.server_id
  bool NoActiveCalls() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return active_calls_ == 0; }
  bool IdleAfterWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || (active_calls_ == 0 && calls_since_trim_);
  }
  bool BusyOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || active_calls_ > 0;
  }
  // Gives the memory that finished calls freed back to the system (glibc
  // keeps freed chunk buffers otherwise) once no call has run for 0.5 s.
  // malloc_trim returns all of it only from the main arena: pricerd uses
  // one arena (server/daemon/main.cc).
  void TrimWhenIdle() ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  int64_t active_calls_ ABSL_GUARDED_BY(mu_) = 0;
  bool calls_since_trim_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  MemoryAccount upload_budget_;  // declared bytes of the uploads in progress
  // Stores uploaded sets: 2 at once, 16 more may wait (then RESOURCE_EXHAUSTED).
  BoundedExecutor uploads_{2, 16};
  IdleWatch idle_uploads_;     // ends uploads idle for upload_idle_seconds
  IdleWatch stalled_readers_;  // cancels Price calls stalled for stalled_reader_seconds
  std::thread trimmer_;        // TrimWhenIdle
};

}  // namespace pricer
