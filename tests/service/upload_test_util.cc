#include "tests/service/upload_test_util.h"

#include "gtest/gtest.h"
#include "tests/service/service_test_util.h"

namespace pricer::testing {

std::string Target(const PricerServer& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

v1::PriceRequest SetRequest(const std::string& id, int64_t issuers, int64_t paths) {
  v1::PriceRequest request = SmallRequest(issuers, paths, 1);
  request.mutable_scenarios()->set_scenario_set(id);
  return request;
}

grpc::Status PriceStatus(v1::Pricer::Stub& stub, const v1::PriceRequest& request) {
  const PriceCall call = RunPrice(stub, request);
  EXPECT_TRUE(call.replies.empty());
  return call.status;
}

}  // namespace pricer::testing
