// Shared pieces of the upload tests (upload_*_test.cc): the address of an
// in-process server for PricerClient, a request priced from an uploaded set,
// and the status of a Price call refused before any work.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>

#include "pricer/v1/pricer.grpc.pb.h"
#include "server/service/pricer_server.h"

namespace pricer::testing {

// "127.0.0.1:<port>" of `server`.
std::string Target(const PricerServer& server);

// A request of SmallRequest's market on `issuers` issuers, priced from a set.
v1::PriceRequest SetRequest(const std::string& id, int64_t issuers, int64_t paths);

// The reply of a Price call that must be refused before any work starts.
grpc::Status PriceStatus(v1::Pricer::Stub& stub, const v1::PriceRequest& request);

}  // namespace pricer::testing
