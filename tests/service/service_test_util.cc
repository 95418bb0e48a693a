#include "tests/service/service_test_util.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/time_scale.h"

namespace pricer::testing {

std::unique_ptr<PricerServer> StartTestServer(ServerOptions options) {
  options.listen = "127.0.0.1:0";
  if (options.devices == "auto") options.devices = "cpu";
  if (options.device_memory.bytes == 0) options.device_memory.bytes = kTestBudgetBytes;
  absl::StatusOr<std::unique_ptr<PricerServer>> server = PricerServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  EXPECT_GT((*server)->port(), 0);
  return *std::move(server);
}

std::unique_ptr<v1::Pricer::Stub> NewStub(const PricerServer& server) {
  return v1::Pricer::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()),
                                                 grpc::InsecureChannelCredentials()));
}

std::string TesterTokenFile() {
  std::string path = ::testing::TempDir() + "pricer-tokens-XXXXXX";
  const int fd = mkstemp(path.data());  // mode 0600
  EXPECT_GE(fd, 0) << path;
  const std::string line = std::string("tester ") + kTesterToken + " 100\n";
  EXPECT_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  close(fd);
  return path;
}

void AddToken(grpc::ClientContext* context, const std::string& token) {
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

PriceCall RunPrice(v1::Pricer::Stub& stub, const v1::PriceRequest& request,
                   const std::string& token) {
  PriceCall call;
  grpc::ClientContext context;
  AddToken(&context, token);
  std::unique_ptr<grpc::ClientReader<v1::PriceReply>> reader = stub.Price(&context, request);
  v1::PriceReply reply;
  while (reader->Read(&reply)) call.replies.push_back(std::move(reply));
  call.status = reader->Finish();
  return call;
}

std::string HealthOf(const PricerServer& server, const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + Scaled(std::chrono::seconds(10)));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    return absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
  }
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

v1::ListDevicesReply ListDevices(v1::Pricer::Stub& stub) {
  grpc::ClientContext context;
  v1::ListDevicesReply reply;
  const grpc::Status status = stub.ListDevices(&context, v1::ListDevicesRequest(), &reply);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return reply;
}

v1::PriceRequest SmallRequest(int64_t issuers, int64_t paths, int64_t columns) {
  v1::PriceRequest request;
  v1::ExplicitMarket* market = request.mutable_market()->mutable_explicit_();
  for (int64_t i = 0; i < issuers; ++i) {
    market->add_spot(5.0 + 0.5 * static_cast<double>(i % 10));
    market->add_volatility(0.1 + 0.05 * static_cast<double>(i % 8));
  }
  request.set_rate(0.02);
  request.set_maturity(1.0);
  request.set_paths(paths);
  request.set_seed(42);
  v1::GeneratedScenarios* scenarios = request.mutable_scenarios()->mutable_generated();
  scenarios->set_columns(columns);
  scenarios->set_seed(7);
  scenarios->set_value_min(0.0);
  scenarios->set_value_max(1.0);
  return request;
}

std::vector<float> TestMatrix(int64_t rows, int64_t columns) {
  std::vector<float> values(static_cast<size_t>(rows * columns));
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  for (float& v : values) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<float>(state >> 40) / static_cast<float>(1 << 24);
  }
  return values;
}

void SetInlineMatrix(const std::vector<float>& values, int64_t rows, int64_t columns,
                     v1::PriceRequest* request) {
  v1::Matrix* matrix = request->mutable_scenarios()->mutable_matrix();
  matrix->set_rows(rows);
  matrix->set_columns(columns);
  matrix->set_values(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

std::vector<float> Floats(const std::string& bytes) {
  EXPECT_EQ(bytes.size() % sizeof(float), 0u);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

std::vector<float> AssembleResult(const PriceCall& call, int64_t rows, int64_t columns,
                                  int64_t column_begin, int64_t column_end) {
  std::vector<float> sc(static_cast<size_t>(rows * columns),
                        std::numeric_limits<float>::quiet_NaN());
  std::vector<int> seen(static_cast<size_t>(columns), 0);
  for (const v1::PriceReply& reply : call.replies) {
    if (!reply.has_chunk()) continue;
    const v1::ResultChunk& chunk = reply.chunk();
    EXPECT_EQ(chunk.rows(), rows);
    EXPECT_GE(chunk.column_begin(), 0);
    EXPECT_LE(chunk.column_end(), columns);
    EXPECT_LT(chunk.column_begin(), chunk.column_end());
    if (chunk.column_begin() < 0 || chunk.column_end() > columns) continue;
    const std::vector<float> values = Floats(chunk.values());
    EXPECT_EQ(static_cast<int64_t>(values.size()),
              rows * (chunk.column_end() - chunk.column_begin()));
    if (static_cast<int64_t>(values.size()) != rows * (chunk.column_end() - chunk.column_begin())) {
      continue;
    }
    std::memcpy(sc.data() + chunk.column_begin() * rows, values.data(),
                values.size() * sizeof(float));
    for (int64_t j = chunk.column_begin(); j < chunk.column_end(); ++j) ++seen[j];
  }
  for (int64_t j = 0; j < columns; ++j) {
    const int expected = j >= column_begin && j < column_end ? 1 : 0;
    EXPECT_EQ(seen[j], expected) << "column " << j;
  }
  return sc;
}

std::vector<float> AssembleTerminalPrices(const PriceCall& call, int64_t paths, int64_t issuers) {
  std::vector<float> st(static_cast<size_t>(paths * issuers),
                        std::numeric_limits<float>::quiet_NaN());
  std::vector<int> seen(static_cast<size_t>(issuers), 0);
  for (const v1::PriceReply& reply : call.replies) {
    if (!reply.has_prices()) continue;
    const v1::TerminalPricesChunk& chunk = reply.prices();
    EXPECT_EQ(chunk.rows(), paths);
    EXPECT_GE(chunk.issuer_begin(), 0);
    EXPECT_LE(chunk.issuer_end(), issuers);
    EXPECT_LT(chunk.issuer_begin(), chunk.issuer_end());
    if (chunk.issuer_begin() < 0 || chunk.issuer_end() > issuers) continue;
    const std::vector<float> values = Floats(chunk.values());
    const int64_t expected = paths * (chunk.issuer_end() - chunk.issuer_begin());
    EXPECT_EQ(static_cast<int64_t>(values.size()), expected);
    if (static_cast<int64_t>(values.size()) != expected) continue;
    std::memcpy(st.data() + chunk.issuer_begin() * paths, values.data(),
                values.size() * sizeof(float));
    for (int64_t i = chunk.issuer_begin(); i < chunk.issuer_end(); ++i) ++seen[i];
  }
  for (int64_t i = 0; i < issuers; ++i) EXPECT_EQ(seen[i], 1) << "issuer " << i;
  return st;
}

void ExpectResultIsProduct(const PriceCall& call, const v1::PriceRequest& request,
                           const std::vector<float>& a) {
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  const v1::ExplicitMarket& market = request.market().explicit_();
  const int64_t issuers = market.spot_size();
  const int64_t paths = request.paths();
  const int64_t columns = request.scenarios().matrix().columns();
  ASSERT_EQ(static_cast<int64_t>(a.size()), issuers * columns);
  const std::vector<float> st = AssembleTerminalPrices(call, paths, issuers);
  const std::vector<float> sc = AssembleResult(call, paths, columns, 0, columns);
  if (::testing::Test::HasFailure()) return;

  const double growth = std::exp(request.rate() * request.maturity());
  for (int64_t i = 0; i < issuers; ++i) {
    double sum = 0, squares = 0;
    for (int64_t p = 0; p < paths; ++p) {
      const double v = st[i * paths + p];
      ASSERT_TRUE(std::isfinite(v) && v > 0) << "ST[" << p << ", " << i << "] = " << v;
      sum += v;
      squares += v * v;
    }
    const double mean = sum / static_cast<double>(paths);
    const double stddev =
        std::sqrt(std::max(0.0, squares / static_cast<double>(paths) - mean * mean));
    const double expected = market.spot(i) * growth;
    EXPECT_NEAR(mean, expected,
                5 * stddev / std::sqrt(static_cast<double>(paths)) + 1e-6 * expected)
        << "issuer " << i;
  }

  ExpectProductColumns(st, sc, a, paths, issuers, 0, columns);
}

void ExpectProductColumns(const std::vector<float>& st, const std::vector<float>& sc,
                          const std::vector<float>& a, int64_t paths, int64_t issuers,
                          int64_t first, int64_t end) {
  int64_t mismatches = 0;
  for (int64_t j = first; j < end; ++j) {
    for (int64_t p = 0; p < paths; ++p) {
      double exact = 0, magnitude = 0;
      for (int64_t i = 0; i < issuers; ++i) {
        const double term = static_cast<double>(st[i * paths + p]) * a[j * issuers + i];
        exact += term;
        magnitude += std::abs(term);
      }
      const double got = sc[j * paths + p];
      if (!(std::abs(got - exact) <= 1e-5 * magnitude) && mismatches++ < 5) {
        ADD_FAILURE() << "SC[" << p << ", " << j << "] = " << got << ", float64 reference " << exact
                      << " (sum |ST||A| " << magnitude << ")";
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace pricer::testing
