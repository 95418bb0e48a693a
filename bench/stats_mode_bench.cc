// The stats-mode target of DESIGN.md section 5, measured side by side in one
// run: the original example (500 issuers, 10,000 paths) over M scenario
// columns, priced end to end (a real pricerd in-process, gRPC on loopback, the
// C++ client; RNG, GEMM, statistics), against one bare multi-threaded
// cblas_sgemm of the same shape (P x N times N x M). Target: ratio <= 1.15.
//
//   stats_mode_bench [--scenarios 100000] [--repeats 2] [--devices cpu]
//                    [--max-shards-in-flight 4]
//                    [--stats mean,stddev,var:0.99,es:0.99,var:0.975,es:0.975]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "client/lib/price_results.h"
#include "client/lib/pricer_client.h"
#include "client/lib/request_options.h"
#include "server/service/pricer_server.h"
#include "spdlog/spdlog.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// One sgemm of ST (P x N) times A (N x M) with all cores, the output touched
// beforehand so page faults are not timed.
double BareSgemmSeconds(int64_t paths, int64_t issuers, int64_t columns) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> st(static_cast<size_t>(paths * issuers));
  std::vector<float> a(static_cast<size_t>(issuers * columns));
  for (float& v : st) v = 5.0f + 5.0f * uniform(rng);
  for (float& v : a) v = uniform(rng);
  std::vector<float> sc(static_cast<size_t>(paths * columns), 0.0f);
  openblas_set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  const auto start = std::chrono::steady_clock::now();
  cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(paths),
              static_cast<blasint>(columns), static_cast<blasint>(issuers), 1.0f, st.data(),
              static_cast<blasint>(paths), a.data(), static_cast<blasint>(issuers), 0.0f, sc.data(),
              static_cast<blasint>(paths));
  return Seconds(start);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t scenarios = 100'000;
  int repeats = 2;
  std::string devices = "cpu";
  int in_flight = pricer::EngineOptions().max_shards_in_flight;
  std::string stats = "mean,stddev,var:0.99,es:0.99,var:0.975,es:0.975";
  CLI::App app{"stats mode end to end against a bare sgemm of the same shape"};
  app.add_option("--scenarios", scenarios)->capture_default_str();
  app.add_option("--repeats", repeats)->capture_default_str();
  app.add_option("--devices", devices)->capture_default_str();
  app.add_option("--max-shards-in-flight", in_flight)->capture_default_str();
  app.add_option("--stats", stats)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);

  pricer::PriceOptions options = pricer::SeedPreset();
  options.scenarios = scenarios;
  absl::StatusOr<std::vector<pricer::StatisticItem>> items = pricer::ParseStatisticsList(stats);
  if (!items.ok()) {
    std::fprintf(stderr, "%s\n", std::string(items.status().message()).c_str());
    return 2;
  }
  options.statistics = *items;
  absl::StatusOr<pricer::v1::PriceRequest> request = pricer::BuildPriceRequest(options);
  if (!request.ok()) return 2;
  const int64_t paths = *options.paths, issuers = *options.issuers;
  const double flops = 2.0 * paths * issuers * scenarios;

  double best_bare = 1e300, best_service = 1e300, gemm = 0, statistics = 0;
  for (int r = 0; r < repeats; ++r) {
    best_bare = std::min(best_bare, BareSgemmSeconds(paths, issuers, scenarios));

    pricer::ServerOptions server_options;
    server_options.listen = "127.0.0.1:0";
    server_options.devices = devices;
    server_options.engine.max_shards_in_flight = in_flight;
    absl::StatusOr<std::unique_ptr<pricer::PricerServer>> server =
        pricer::PricerServer::Start(server_options);
    if (!server.ok()) return 1;
    pricer::PricerClient client(absl::StrCat("127.0.0.1:", (*server)->port()));
    pricer::PriceResults results({}, *items);
    const auto start = std::chrono::steady_clock::now();
    const grpc::Status status = client.Price(
        *request, [&](const pricer::v1::PriceReply& reply) { return results.OnReply(reply); });
    const double seconds = Seconds(start);
    if (!status.ok() || !results.finished().has_value()) {
      std::fprintf(stderr, "price failed: %s\n", status.error_message().c_str());
      return 1;
    }
    if (seconds < best_service) {
      best_service = seconds;
      gemm = results.finished()->gemm_seconds();
      statistics = results.finished()->statistics_seconds();
    }
  }

  std::printf(
      "shape: P=%lld paths x N=%lld issuers x M=%lld scenarios, %.3g flops; stats %s; "
      "devices %s, %d shards in flight; best of %d\n",
      static_cast<long long>(paths), static_cast<long long>(issuers),
      static_cast<long long>(scenarios), flops, stats.c_str(), devices.c_str(), in_flight, repeats);
  std::printf("%-34s %10s %10s\n", "", "seconds", "GFLOP/s");
  std::printf("%-34s %10.3f %10.1f\n", "bare cblas_sgemm (all cores)", best_bare,
              flops / best_bare / 1e9);
  std::printf("%-34s %10.3f %10.1f\n", "pricerd stats mode, end to end", best_service,
              flops / best_service / 1e9);
  std::printf("ratio service / bare: %.3f (target <= 1.15)\n", best_service / best_bare);
  std::printf("device thread-seconds: GEMM %.2f, statistics %.2f (%.1f%% of GEMM)\n", gemm,
              statistics, 100.0 * statistics / gemm);
  return 0;
}
