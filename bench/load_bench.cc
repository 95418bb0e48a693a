// Small-request latency and throughput, like a load-test tool's concurrency
// sweep: for each concurrency C, C client threads issue back-to-back Price
// calls of a tiny job (10 generated issuers, 1,000 paths, 100 generated
// scenario columns, mean and stddev) for --seconds after a warm-up, and every
// call's latency (request sent to status received) is recorded. Target
// (DESIGN.md): p50 under 2 ms at concurrency 1.
//
//   load_bench [--target host:port] [--concurrency 1,4,16,64] [--seconds 5]
//              [--warmup 0.5] [--channels shared|per-thread] [--json FILE]
//
// Without --target it starts pricerd in-process on 127.0.0.1:0 (cpu devices),
// so on a small machine the server and the clients share the cores.
//
// Channels: by default all threads share one channel, as a gRPC client
// normally does (one PricerClient per process, as the CLI): the calls are
// HTTP/2 streams on one TCP connection. `--channels per-thread` gives each
// thread a channel with its own subchannel pool, hence its own connection (two
// channels with the same target and arguments would otherwise share gRPC's
// global subchannel, and so the connection); that removes head-of-line
// effects of one connection and shows what they cost.
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/lib/request_options.h"
#include "client/lib/statistics_list.h"
#include "pricer/v1/pricer.grpc.pb.h"
#include "server/service/pricer_server.h"
#include "spdlog/spdlog.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// One call's timeline, in ms from sending the request.
struct Call {
  double accepted = 0;  // the `accepted` reply read
  double finished = 0;  // the `finished` reply read
  double total = 0;     // the call's status received
  double engine = 0;    // finished.elapsed_seconds: the job in the engine, Submit to done
};

// One concurrency level's result.
struct Level {
  int concurrency = 0;
  int64_t calls = 0;
  int64_t errors = 0;
  double requests_per_second = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;  // total latency, ms
  double accepted_p50 = 0, finished_p50 = 0, engine_p50 = 0;
};

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return Percentile(values, 0.5);
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, bool own_connection) {
  grpc::ChannelArguments arguments;
  if (own_connection) arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), arguments);
}

// One Price call read to the end; false on a non-OK status, a missing
// `finished` or missing columns.
bool PriceOnce(pricer::v1::Pricer::Stub& stub, const pricer::v1::PriceRequest& request,
               Call* call) {
  grpc::ClientContext context;
  const Clock::time_point start = Clock::now();
  std::unique_ptr<grpc::ClientReader<pricer::v1::PriceReply>> reader =
      stub.Price(&context, request);
  pricer::v1::PriceReply reply;
  bool finished = false;
  int64_t columns = 0;
  while (reader->Read(&reply)) {
    if (reply.has_accepted()) call->accepted = Ms(Clock::now() - start);
    if (reply.has_chunk()) columns += reply.chunk().column_end() - reply.chunk().column_begin();
    if (reply.has_finished()) {
      call->finished = Ms(Clock::now() - start);
      call->engine = reply.finished().elapsed_seconds() * 1e3;
      finished = true;
    }
  }
  const grpc::Status status = reader->Finish();
  call->total = Ms(Clock::now() - start);
  return status.ok() && finished && columns == request.scenarios().generated().columns();
}

// `concurrency` threads calling back to back; calls that start in the
// measured window [warm-up end, warm-up end + seconds) count.
Level RunLevel(const std::string& target, bool per_thread_channels,
               const pricer::v1::PriceRequest& request, int concurrency, double warmup_seconds,
               double seconds) {
  std::shared_ptr<grpc::Channel> shared = MakeChannel(target, false);
  std::vector<std::unique_ptr<pricer::v1::Pricer::Stub>> stubs;
  for (int t = 0; t < concurrency; ++t) {
    stubs.push_back(
        pricer::v1::Pricer::NewStub(per_thread_channels ? MakeChannel(target, true) : shared));
  }
  const Clock::time_point start = Clock::now();
  const Clock::time_point window_begin = start + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(warmup_seconds));
  const Clock::time_point window_end = window_begin + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(seconds));
  std::vector<std::vector<Call>> calls(concurrency);
  std::vector<int64_t> errors(concurrency, 0);
  std::vector<Clock::time_point> last_end(concurrency, window_begin);
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      for (;;) {
        const Clock::time_point call_start = Clock::now();
        if (call_start >= window_end) return;
        Call call;
        const bool ok = PriceOnce(*stubs[t], request, &call);
        if (call_start < window_begin) continue;
        last_end[t] = Clock::now();
        if (ok) {
          calls[t].push_back(call);
        } else {
          ++errors[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  Level level;
  level.concurrency = concurrency;
  std::vector<double> total, accepted, finished, engine;
  for (int t = 0; t < concurrency; ++t) {
    level.errors += errors[t];
    for (const Call& call : calls[t]) {
      total.push_back(call.total);
      accepted.push_back(call.accepted);
      finished.push_back(call.finished);
      engine.push_back(call.engine);
    }
  }
  level.calls = static_cast<int64_t>(total.size());
  // Throughput over the window, extended to the end of its last call.
  const Clock::time_point end = *std::max_element(last_end.begin(), last_end.end());
  const double measured = std::chrono::duration<double>(end - window_begin).count();
  level.requests_per_second = measured > 0 ? static_cast<double>(level.calls) / measured : 0;
  std::sort(total.begin(), total.end());
  level.p50 = Percentile(total, 0.50);
  level.p90 = Percentile(total, 0.90);
  level.p99 = Percentile(total, 0.99);
  level.max = total.empty() ? 0 : total.back();
  level.accepted_p50 = Median(accepted);
  level.finished_p50 = Median(finished);
  level.engine_p50 = Median(engine);
  return level;
}

}  // namespace

int main(int argc, char** argv) {
  std::string target;
  std::string concurrency_list = "1,4,16,64";
  double seconds = 5.0;
  double warmup = 0.5;
  std::string channels = "shared";
  std::string json;
  std::string devices = "cpu";
  CLI::App app{"small-request latency and throughput at several concurrencies"};
  app.add_option("--target", target, "host:port of a running pricerd; default: one in-process");
  app.add_option("--concurrency", concurrency_list, "client threads per level, comma-separated")
      ->capture_default_str();
  app.add_option("--seconds", seconds, "measured seconds per level")->capture_default_str();
  app.add_option("--warmup", warmup, "seconds per level before measuring")->capture_default_str();
  app.add_option("--channels", channels, "one channel for all threads, or one per thread")
      ->check(CLI::IsMember({"shared", "per-thread"}))
      ->capture_default_str();
  app.add_option("--json", json, "also write the table as JSON to this file");
  app.add_option("--devices", devices, "devices of the in-process server")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);

  std::vector<int> levels;
  for (absl::string_view item : absl::StrSplit(concurrency_list, ',')) {
    int c = 0;
    if (!absl::SimpleAtoi(item, &c) || c < 1) {
      std::fprintf(stderr, "--concurrency: '%s' is not a positive integer\n",
                   std::string(item).c_str());
      return 2;
    }
    levels.push_back(c);
  }

  pricer::PriceOptions options;
  options.issuers = 10;
  options.paths = 1'000;
  options.scenarios = 100;
  options.seed = 42;
  options.rate = 0.02;
  options.maturity = 1.0;
  options.statistics = *pricer::ParseStatisticsList("mean,stddev");
  absl::StatusOr<pricer::v1::PriceRequest> request = pricer::BuildPriceRequest(options);
  if (!request.ok()) {
    std::fprintf(stderr, "%s\n", std::string(request.status().message()).c_str());
    return 2;
  }

  std::unique_ptr<pricer::PricerServer> server;
  if (target.empty()) {
    pricer::ServerOptions server_options;
    server_options.listen = "127.0.0.1:0";
    server_options.devices = devices;
    absl::StatusOr<std::unique_ptr<pricer::PricerServer>> started =
        pricer::PricerServer::Start(server_options);
    if (!started.ok()) {
      std::fprintf(stderr, "%s\n", std::string(started.status().message()).c_str());
      return 1;
    }
    server = *std::move(started);
    target = absl::StrCat("127.0.0.1:", server->port());
  }

  std::printf(
      "tiny job: 10 issuers, 1,000 paths, 100 scenario columns, mean,stddev; target %s%s; "
      "%s channel%s; %.1f s per level after %.1f s warm-up; %u hardware threads\n",
      target.c_str(), server ? " (in-process pricerd)" : "", channels.c_str(),
      channels == "shared" ? "" : "s", seconds, warmup, std::thread::hardware_concurrency());
  std::printf("%11s %8s %6s %10s %8s %8s %8s %8s | %9s %9s %9s\n", "concurrency", "calls", "errors",
              "requests/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "accepted", "finished",
              "engine");
  std::vector<Level> results;
  for (int c : levels) {
    const Level l = RunLevel(target, channels == "per-thread", *request, c, warmup, seconds);
    std::printf("%11d %8lld %6lld %10.1f %8.3f %8.3f %8.3f %8.3f | %9.3f %9.3f %9.3f\n",
                l.concurrency, static_cast<long long>(l.calls), static_cast<long long>(l.errors),
                l.requests_per_second, l.p50, l.p90, l.p99, l.max, l.accepted_p50, l.finished_p50,
                l.engine_p50);
    std::fflush(stdout);
    results.push_back(l);
  }
  std::printf(
      "accepted, finished: median ms from sending the request to reading that reply; engine: "
      "median of finished.elapsed_seconds (the job from Submit to its last shard)\n");

  if (!json.empty()) {
    FILE* out = std::fopen(json.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", json.c_str());
      return 1;
    }
    std::fprintf(out, "[\n");
    for (size_t i = 0; i < results.size(); ++i) {
      const Level& l = results[i];
      std::fprintf(out,
                   "  {\"concurrency\": %d, \"calls\": %lld, \"errors\": %lld, "
                   "\"requests_per_second\": %.3f, \"p50_ms\": %.4f, \"p90_ms\": %.4f, "
                   "\"p99_ms\": %.4f, \"max_ms\": %.4f, \"accepted_p50_ms\": %.4f, "
                   "\"finished_p50_ms\": %.4f, \"engine_p50_ms\": %.4f, \"channels\": \"%s\"}%s\n",
                   l.concurrency, static_cast<long long>(l.calls), static_cast<long long>(l.errors),
                   l.requests_per_second, l.p50, l.p90, l.p99, l.max, l.accepted_p50,
                   l.finished_p50, l.engine_p50, channels.c_str(),
                   i + 1 < results.size() ? "," : "");
    }
    std::fprintf(out, "]\n");
    std::fclose(out);
  }
  return 0;
}
