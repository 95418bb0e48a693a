// The gRPC face of the engine: validates requests, submits jobs and streams
// their chunks back (callback API, one write in flight per call).
#pragma once

#include <cstdint>

#include "pricer/v1/pricer.grpc.pb.h"
#include "server/engine/engine.h"

namespace pricer {

class PricerService final : public v1::Pricer::CallbackService {
 public:
  // `max_request_bytes`: a larger request is refused with RESOURCE_EXHAUSTED.
  PricerService(Engine& engine, int64_t max_request_bytes)
      : engine_(engine), max_request_bytes_(max_request_bytes) {}

  grpc::ServerWriteReactor<v1::PriceReply>* Price(grpc::CallbackServerContext* context,
                                                  const v1::PriceRequest* request) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* context,
                                        const v1::ListDevicesRequest* request,
                                        v1::ListDevicesReply* reply) override;

 private:
  Engine& engine_;
  const int64_t max_request_bytes_;
};

}  // namespace pricer
