// Shared pieces of the service tests: a real in-process server on port 0, a
// stub talking to it, and helpers that build requests and read replies.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pricer/v1/pricer.grpc.pb.h"
#include "server/service/pricer_server.h"

namespace pricer::testing {

using Clock = std::chrono::steady_clock;

// Seconds since `start`, for the tests' time limits.
inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline constexpr int64_t kTestBudgetBytes = 1LL << 30;

// Starts a server on 127.0.0.1:0, or fails the test: on options.devices ("cpu"
// when left at "auto") with options.device_memory.bytes per device (1 GiB when
// left at 0).
std::unique_ptr<PricerServer> StartTestServer(ServerOptions options = {});
std::unique_ptr<v1::Pricer::Stub> NewStub(const PricerServer& server);

// A token file for ServerOptions::auth_tokens_file (mode 0600, a fresh
// temporary file) naming one client, "tester", with the right to priorities
// up to 100; its calls carry kTesterToken (RunPrice's `token`, AddToken).
inline constexpr char kTesterToken[] = "tester-5b1d0f3c9a7e";
std::string TesterTokenFile();
void AddToken(grpc::ClientContext* context, const std::string& token);

// Every reply of one Price call and how it ended.
struct PriceCall {
  grpc::Status status;
  std::vector<v1::PriceReply> replies;
};
// `token`: sent as `authorization: Bearer <token>` unless empty.
PriceCall RunPrice(v1::Pricer::Stub& stub, const v1::PriceRequest& request,
                   const std::string& token = "");

v1::ListDevicesReply ListDevices(v1::Pricer::Stub& stub);

// The server's answer to grpc.health.v1.Health/Check for `service` ("" or
// "pricer.v1.Pricer"), as the status's name ("SERVING", "NOT_SERVING"), or
// the call's error code's.
std::string HealthOf(const PricerServer& server, const std::string& service);

// A valid request: explicit market of `issuers` issuers, generated scenarios.
v1::PriceRequest SmallRequest(int64_t issuers = 4, int64_t paths = 1000, int64_t columns = 100);

// A deterministic N x M matrix, column-major, values in [0, 1).
std::vector<float> TestMatrix(int64_t rows, int64_t columns);
void SetInlineMatrix(const std::vector<float>& values, int64_t rows, int64_t columns,
                     v1::PriceRequest* request);

// Decodes little-endian float32 bytes.
std::vector<float> Floats(const std::string& bytes);

// Assembles the column-major P x M result SC from the chunks, placed by their
// column range, and checks that each column of [column_begin, column_end)
// arrived exactly once and no other did (those stay NaN).
std::vector<float> AssembleResult(const PriceCall& call, int64_t rows, int64_t columns,
                                  int64_t column_begin, int64_t column_end);

// Assembles ST (P x N, column-major) from the terminal-prices chunks; checks
// that each issuer arrived exactly once.
std::vector<float> AssembleTerminalPrices(const PriceCall& call, int64_t paths, int64_t issuers);

// For a request with an explicit market, an inline matrix `a` (column-major)
// and full + terminal_prices output over all columns: checks that ST is
// plausible (positive, per-issuer mean within 5 standard errors of
// spot * exp(rate * maturity)) and that SC equals ST * A computed in float64
// within float32 rounding (1e-5 of sum_i |ST[p,i]| |A[i,j]|).
void ExpectResultIsProduct(const PriceCall& call, const v1::PriceRequest& request,
                           const std::vector<float>& a);

// Expects columns [first, end) of `sc` (P x M, column-major, indexed by the
// column of A) to equal ST * A in float64, within 1e-5 of sum |ST||A|.
void ExpectProductColumns(const std::vector<float>& st, const std::vector<float>& sc,
                          const std::vector<float>& a, int64_t paths, int64_t issuers,
                          int64_t first, int64_t end);

}  // namespace pricer::testing
