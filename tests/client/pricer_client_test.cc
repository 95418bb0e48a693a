// What PricerClient sends: a recording server in process (port 0) sees the
// token on every call, the retries of a broken Price call and the parts of
// a split one included; and which broken calls it retries, how often and
// after how long (client_protocol.proto's RetryPolicy).
#include "client/lib/pricer_client.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_context.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pricer/v1/client_protocol.pb.h"
#include "tests/time_scale.h"

namespace pricer {
namespace {

using ::testing::AllOf;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using HealthResponse = grpc::health::v1::HealthCheckResponse;

// The authorization metadata of each call, by method.
class Calls {
 public:
  void Record(const std::string& method, const grpc::ServerContext& context) {
    const auto& metadata = context.client_metadata();
    std::vector<std::string> values;
    for (auto [it, end] = metadata.equal_range("authorization"); it != end; ++it) {
      values.emplace_back(it->second.data(), it->second.size());
    }
    absl::MutexLock lock(&mu_);
    authorization_[method].push_back(absl::StrJoin(values, "|"));
  }
  std::vector<std::string> Authorization(const std::string& method) {
    absl::MutexLock lock(&mu_);
    return authorization_[method];
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::vector<std::string>> authorization_ ABSL_GUARDED_BY(mu_);
};

// Answers every Price call with its columns, after failing the first
// `failures` calls with `code` (UNAVAILABLE unless FailNext says otherwise).
class RecordingPricer final : public v1::Pricer::Service {
 public:
  RecordingPricer(Calls& calls, int failures) : calls_(calls), failures_(failures) {}

  void FailNext(int failures, grpc::StatusCode code) {
    absl::MutexLock lock(&mu_);
    failures_ = failures;
    code_ = code;
  }

  grpc::Status Price(grpc::ServerContext* context, const v1::PriceRequest* request,
                     grpc::ServerWriter<v1::PriceReply>* writer) override {
    calls_.Record("Price", *context);
    {
      absl::MutexLock lock(&mu_);
      if (failures_ > 0) {
        --failures_;
        return grpc::Status(code_, "broken on purpose");
      }
    }
    v1::PriceReply reply;
    v1::JobAccepted* accepted = reply.mutable_accepted();
    accepted->set_issuers(1);
    accepted->set_paths(1);
    accepted->set_column_begin(request->column_begin());
    accepted->set_column_end(request->column_end());
    writer->Write(reply);
    v1::ResultChunk* chunk = reply.mutable_chunk();
    chunk->set_column_begin(request->column_begin());
    chunk->set_column_end(request->column_end());
    writer->Write(reply);
    reply.mutable_finished();
    writer->Write(reply);
    return grpc::Status::OK;
  }

  grpc::Status ListDevices(grpc::ServerContext* context, const v1::ListDevicesRequest*,
                           v1::ListDevicesReply*) override {
    calls_.Record("ListDevices", *context);
    return grpc::Status::OK;
  }

  grpc::Status UploadScenarios(grpc::ServerContext* context,
                               grpc::ServerReader<v1::ScenarioChunk>* reader,
                               v1::ScenarioSet* set) override {
    calls_.Record("UploadScenarios", *context);
    v1::ScenarioChunk chunk;
    while (reader->Read(&chunk)) {
    }
    set->set_id("recorded");
    return grpc::Status::OK;
  }

 private:
  Calls& calls_;
  absl::Mutex mu_;
  int failures_ ABSL_GUARDED_BY(mu_);
  grpc::StatusCode code_ ABSL_GUARDED_BY(mu_) = grpc::StatusCode::UNAVAILABLE;
};

class RecordingHealth final : public grpc::health::v1::Health::Service {
 public:
  explicit RecordingHealth(Calls& calls) : calls_(calls) {}

  grpc::Status Check(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     HealthResponse* response) override {
    calls_.Record("Check", *context);
    if (request->service().empty()) {
      response->set_status(HealthResponse::SERVING);
      return grpc::Status::OK;
    }
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service " + request->service());
  }

 private:
  Calls& calls_;
};

class PricerClientTest : public ::testing::Test {
 protected:
  void Start(int price_failures) {
    pricer_ = std::make_unique<RecordingPricer>(calls_, price_failures);
    health_ = std::make_unique<RecordingHealth>(calls_);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(pricer_.get());
    builder.RegisterService(health_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    target_ = absl::StrCat("127.0.0.1:", port);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  static v1::PriceRequest Request(int64_t columns) {
    v1::PriceRequest request;
    request.set_column_begin(0);
    request.set_column_end(columns);
    return request;
  }
  static grpc::Status Ignore(const ReceivedReply&) { return grpc::Status::OK; }

  Calls calls_;
  std::unique_ptr<RecordingPricer> pricer_;
  std::unique_ptr<RecordingHealth> health_;
  std::unique_ptr<grpc::Server> server_;
  std::string target_;
};

TEST_F(PricerClientTest, TokenGoesWithEveryCall) {
  Start(/*price_failures=*/1);
  ConnectionOptions options;
  options.token = "s3cret";
  PricerClient client(target_, options);

  v1::ListDevicesReply devices;
  ASSERT_TRUE(client.ListDevices(&devices).ok());
  v1::ScenarioSet set;
  ASSERT_TRUE(client.UploadScenarios(2, 3, std::vector<float>(6, 0.5f), &set, 8).ok());
  EXPECT_EQ(set.id(), "recorded");
  // The first call breaks and is retried.
  grpc::Status price = client.Price(Request(10), Ignore);
  ASSERT_TRUE(price.ok()) << price.error_message();
  HealthResponse::ServingStatus status = HealthResponse::UNKNOWN;
  ASSERT_TRUE(client.Health("", &status).ok());
  EXPECT_EQ(status, HealthResponse::SERVING);

  const std::string bearer = "Bearer s3cret";
  EXPECT_THAT(calls_.Authorization("ListDevices"), ElementsAre(bearer));
  EXPECT_THAT(calls_.Authorization("UploadScenarios"), ElementsAre(bearer));
  EXPECT_THAT(calls_.Authorization("Price"), ElementsAre(bearer, bearer));
  EXPECT_THAT(calls_.Authorization("Check"), ElementsAre(bearer));
}

TEST_F(PricerClientTest, TokenGoesWithEveryPartOfASplitCall) {
  Start(/*price_failures=*/0);
  ConnectionOptions options;
  options.token = "s3cret";
  PricerClient client(target_, options);
  grpc::Status price = client.PriceSplit(Request(12), 0, 12, 3, Ignore);
  ASSERT_TRUE(price.ok()) << price.error_message();
  EXPECT_THAT(calls_.Authorization("Price"), AllOf(SizeIs(3), Each("Bearer s3cret")));
  // The calls that connect to every server before the parts start: at least
  // one per part (more until no new server has answered for 50 ms).
  EXPECT_THAT(calls_.Authorization("ListDevices"),
              AllOf(SizeIs(::testing::Ge(3)), Each("Bearer s3cret")));
}

TEST_F(PricerClientTest, NoTokenNoAuthorization) {
  Start(/*price_failures=*/0);
  PricerClient client(target_);
  v1::ListDevicesReply devices;
  ASSERT_TRUE(client.ListDevices(&devices).ok());
  EXPECT_THAT(calls_.Authorization("ListDevices"), ElementsAre(""));
}

TEST_F(PricerClientTest, FailedHealthCheckIsItsStatus) {
  Start(/*price_failures=*/0);
  PricerClient client(target_);
  HealthResponse::ServingStatus status = HealthResponse::UNKNOWN;
  grpc::Status s = client.Health("no.such.Service", &status);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status, HealthResponse::UNKNOWN);
}

TEST_F(PricerClientTest, WrongOptionsFailEveryCallWithoutSendingIt) {
  Start(/*price_failures=*/0);
  ConnectionOptions options;
  options.tls_ca_file =
      (std::filesystem::temp_directory_path() / "pricer_client_no_ca.pem").string();
  std::filesystem::remove(options.tls_ca_file);
  PricerClient client(target_, options);
  const auto refused = [&](const grpc::Status& s) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(s.error_message(), AllOf(HasSubstr("--tls-ca"), HasSubstr(options.tls_ca_file)));
  };
  v1::ListDevicesReply devices;
  refused(client.ListDevices(&devices));
  v1::ScenarioSet set;
  refused(client.UploadScenarios(1, 1, {1.0f}, &set));
  refused(client.Price(Request(4), Ignore));
  refused(client.PriceSplit(Request(4), 0, 4, 2, Ignore));
  HealthResponse::ServingStatus status = HealthResponse::UNKNOWN;
  refused(client.Health("", &status));
  for (const char* method : {"ListDevices", "UploadScenarios", "Price", "Check"}) {
    EXPECT_THAT(calls_.Authorization(method), SizeIs(0)) << method;
  }
}

// The codes client_protocol.proto names, read here on their own.
std::set<grpc::StatusCode> ProtocolRetryableCodes() {
  std::set<std::string> names =
      absl::StrSplit(v1::RetryPolicy::default_instance().retryable_codes(), ',');
  std::set<grpc::StatusCode> codes;
  for (int code = grpc::StatusCode::OK; code <= grpc::StatusCode::UNAUTHENTICATED; ++code) {
    if (names.erase(absl::StatusCodeToString(static_cast<absl::StatusCode>(code))) > 0) {
      codes.insert(static_cast<grpc::StatusCode>(code));
    }
  }
  EXPECT_THAT(names, SizeIs(0)) << "names in retryable_codes that are not status codes";
  return codes;
}

TEST(RetryPolicy, RetriesOnlyUnavailableAndAborted) {
  // Abseil's canon: only these two codes say that the same call may succeed.
  EXPECT_EQ(v1::RetryPolicy::default_instance().retryable_codes(), "UNAVAILABLE,ABORTED");
  EXPECT_THAT(ProtocolRetryableCodes(),
              ElementsAre(grpc::StatusCode::ABORTED, grpc::StatusCode::UNAVAILABLE));
}

TEST_F(PricerClientTest, RetriesTheCodesOfTheProtocolAndNoOther) {
  Start(/*price_failures=*/0);
  PricerClient client(target_);
  const std::set<grpc::StatusCode> retryable = ProtocolRetryableCodes();
  size_t calls = 0;
  for (int code = grpc::StatusCode::CANCELLED; code <= grpc::StatusCode::UNAUTHENTICATED; ++code) {
    const auto status_code = static_cast<grpc::StatusCode>(code);
    pricer_->FailNext(1, status_code);
    const grpc::Status price = client.Price(Request(10), Ignore);
    const bool retried = retryable.contains(status_code);
    EXPECT_EQ(price.ok(), retried) << code << " " << price.error_message();
    if (!retried) {
      EXPECT_EQ(price.error_code(), status_code) << code;
    }
    const size_t now = calls_.Authorization("Price").size();
    EXPECT_EQ(now - calls, retried ? 2u : 1u) << "Price calls for code " << code;
    calls = now;
  }
}

TEST_F(PricerClientTest, GivesUpAfterTheRetriesWithoutProgressOfTheProtocol) {
  const v1::RetryPolicy& policy = v1::RetryPolicy::default_instance();
  Start(/*price_failures=*/1000);
  PricerClient client(target_);
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status price = client.Price(Request(10), Ignore);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(price.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(price.error_message(), "broken on purpose");
  EXPECT_THAT(calls_.Authorization("Price"), SizeIs(policy.max_retries_without_progress() + 1));
  // 0.2 s, 0.4 s, 0.8 s between the calls.
  std::chrono::milliseconds backoffs(0), backoff(policy.first_backoff_ms());
  for (int retry = 0; retry < policy.max_retries_without_progress(); ++retry) {
    backoffs += backoff;
    backoff *= policy.backoff_multiplier();
  }
  EXPECT_GE(waited, backoffs);
  // No wait beyond the backoffs but the calls themselves, milliseconds each
  // (measured: 1.45 s for the whole test against 1.4 s of backoffs).
  EXPECT_LT(waited, backoffs + Scaled(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace pricer
