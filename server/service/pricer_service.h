// The gRPC face of the engine: validates requests, submits jobs and streams
// their chunks back (callback API, one write in flight per call).
#pragma once

#include <cstdint>

#include "pricer/v1/pricer.grpc.pb.h"
#include "server/engine/engine.h"
#include "server/engine/scenario_store.h"

namespace pricer {

class PricerService final : public v1::Pricer::CallbackService {
 public:
  // `max_request_bytes`: a larger request is refused with RESOURCE_EXHAUSTED.
  // `max_queued_jobs` is reported by ListDevices (the engine enforces it).
  // `store` holds the uploaded scenario sets.
  PricerService(Engine& engine, ScenarioStore& store, int64_t max_request_bytes,
                int64_t max_queued_jobs)
      : engine_(engine),
        store_(store),
        max_request_bytes_(max_request_bytes),
        max_queued_jobs_(max_queued_jobs) {}

  grpc::ServerWriteReactor<v1::PriceReply>* Price(grpc::CallbackServerContext* context,
                                                  const v1::PriceRequest* request) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* context,
                                        const v1::ListDevicesRequest* request,
                                        v1::ListDevicesReply* reply) override;
  grpc::ServerReadReactor<v1::ScenarioChunk>* UploadScenarios(grpc::CallbackServerContext* context,
                                                              v1::ScenarioSet* reply) override;

 private:
  Engine& engine_;
  ScenarioStore& store_;
  const int64_t max_request_bytes_;
  const int64_t max_queued_jobs_;
};

}  // namespace pricer
