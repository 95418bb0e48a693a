// One UploadScenarios call (UploadReactor, in upload_reactor.cc): the chunks
// into one matrix, checked against the shape of the first, then stored on the
// service's bounded upload executor.
#pragma once

#include "pricer/v1/pricer.grpc.pb.h"
#include "server/service/pricer_service.h"

namespace pricer {

// The reactor of one UploadScenarios call; it deletes itself when done.
grpc::ServerReadReactor<v1::ScenarioChunk>* NewUploadReactor(
    PricerService& service, const grpc::CallbackServerContext& context, v1::ScenarioSet* reply);

}  // namespace pricer
