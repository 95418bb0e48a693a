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
#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// One client thread's calls that started in the measured window.
struct ThreadRecord {
  std::vector<Call> calls;  // the OK ones
  int64_t errors = 0;
  Clock::time_point last_end;  // the end of its last counted call
};

Clock::duration Seconds(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// One stub per thread: all on one channel, or each on its own connection.
std::vector<std::unique_ptr<pricer::v1::Pricer::Stub>> MakeStubs(const std::string& target,
                                                                 bool per_thread_channels,
                                                                 int concurrency) {
  std::shared_ptr<grpc::Channel> shared = MakeChannel(target, false);
  std::vector<std::unique_ptr<pricer::v1::Pricer::Stub>> stubs;
  for (int t = 0; t < concurrency; ++t) {
    stubs.push_back(
        pricer::v1::Pricer::NewStub(per_thread_channels ? MakeChannel(target, true) : shared));
  }
  return stubs;
}

// The level's throughput and latency percentiles from what its threads recorded.
Level Summarize(const std::vector<ThreadRecord>& records, Clock::time_point window_begin) {
  Level level;
  level.concurrency = static_cast<int>(records.size());
  std::vector<double> total, accepted, finished, engine;
  Clock::time_point end = window_begin;
  for (const ThreadRecord& record : records) {
    level.errors += record.errors;
    end = std::max(end, record.last_end);
    for (const Call& call : record.calls) {
      total.push_back(call.total);
      accepted.push_back(call.accepted);
      finished.push_back(call.finished);
      engine.push_back(call.engine);
    }
  }
  level.calls = static_cast<int64_t>(total.size());
  // Throughput over the window, extended to the end of its last call.
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

// `concurrency` threads calling back to back; calls that start in the
// measured window [warm-up end, warm-up end + seconds) count.
Level RunLevel(const std::string& target, bool per_thread_channels,
               const pricer::v1::PriceRequest& request, int concurrency, double warmup_seconds,
               double seconds) {
  const std::vector<std::unique_ptr<pricer::v1::Pricer::Stub>> stubs =
      MakeStubs(target, per_thread_channels, concurrency);
  const Clock::time_point window_begin = Clock::now() + Seconds(warmup_seconds);
  const Clock::time_point window_end = window_begin + Seconds(seconds);
  std::vector<ThreadRecord> records(concurrency, ThreadRecord{{}, 0, window_begin});
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      for (;;) {
        const Clock::time_point call_start = Clock::now();
        if (call_start >= window_end) return;
        Call call;
        const bool ok = PriceOnce(*stubs[t], request, &call);
        if (call_start < window_begin) continue;
        records[t].last_end = Clock::now();
        if (ok) {
          records[t].calls.push_back(call);
        } else {
          ++records[t].errors;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return Summarize(records, window_begin);
}

// The command line.
struct Flags {
  std::string target;
  std::string concurrency_list = "1,4,16,64";
  double seconds = 5.0;
  double warmup = 0.5;
  std::string channels = "shared";
  std::string json;
  std::string devices = "cpu";
};

void DefineFlags(CLI::App& app, Flags& flags) {
  app.add_option("--target", flags.target,
                 "host:port of a running pricerd; default: one in-process");
  app.add_option("--concurrency", flags.concurrency_list,
                 "client threads per level, comma-separated")
      ->capture_default_str();
  app.add_option("--seconds", flags.seconds, "measured seconds per level")->capture_default_str();
  app.add_option("--warmup", flags.warmup, "seconds per level before measuring")
      ->capture_default_str();
  app.add_option("--channels", flags.channels, "one channel for all threads, or one per thread")
      ->check(CLI::IsMember({"shared", "per-thread"}))
      ->capture_default_str();
  app.add_option("--json", flags.json, "also write the table as JSON to this file");
  app.add_option("--devices", flags.devices, "devices of the in-process server")
      ->capture_default_str();
}

// --concurrency's comma-separated positive integers.
absl::StatusOr<std::vector<int>> ParseLevels(const std::string& list) {
  std::vector<int> levels;
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    int c = 0;
    if (!absl::SimpleAtoi(item, &c) || c < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--concurrency: '", item, "' is not a positive integer"));
    }
    levels.push_back(c);
  }
  return levels;
}

// The tiny job every call prices.
absl::StatusOr<pricer::v1::PriceRequest> TinyRequest() {
  pricer::PriceOptions options;
  options.issuers = 10;
  options.paths = 1'000;
  options.scenarios = 100;
  options.seed = 42;
  options.rate = 0.02;
  options.maturity = 1.0;
  options.statistics = *pricer::ParseStatisticsList("mean,stddev");
  return pricer::BuildPriceRequest(options);
}

// pricerd in this process on a free port of 127.0.0.1.
absl::StatusOr<std::unique_ptr<pricer::PricerServer>> StartInProcess(const std::string& devices) {
  pricer::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.devices = devices;
  return pricer::PricerServer::Start(options);
}

void PrintHeader(const Flags& flags, bool in_process) {
  std::printf(
      "tiny job: 10 issuers, 1,000 paths, 100 scenario columns, mean,stddev; target %s%s; "
      "%s channel%s; %.1f s per level after %.1f s warm-up; %u hardware threads\n",
      flags.target.c_str(), in_process ? " (in-process pricerd)" : "", flags.channels.c_str(),
      flags.channels == "shared" ? "" : "s", flags.seconds, flags.warmup,
      std::thread::hardware_concurrency());
  std::printf("%11s %8s %6s %10s %8s %8s %8s %8s | %9s %9s %9s\n", "concurrency", "calls", "errors",
              "requests/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "accepted", "finished",
              "engine");
}

void PrintLevel(const Level& l) {
  std::printf("%11d %8lld %6lld %10.1f %8.3f %8.3f %8.3f %8.3f | %9.3f %9.3f %9.3f\n",
              l.concurrency, static_cast<long long>(l.calls), static_cast<long long>(l.errors),
              l.requests_per_second, l.p50, l.p90, l.p99, l.max, l.accepted_p50, l.finished_p50,
              l.engine_p50);
  std::fflush(stdout);
}

// The table as a JSON array, one object per level; false when `path` cannot
// be opened.
bool WriteJson(const std::string& path, const std::vector<Level>& results,
               const std::string& channels) {
  FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return false;
  std::fprintf(out, "[\n");
  for (size_t i = 0; i < results.size(); ++i) {
    const Level& l = results[i];
    std::fprintf(out,
                 "  {\"concurrency\": %d, \"calls\": %lld, \"errors\": %lld, "
                 "\"requests_per_second\": %.3f, \"p50_ms\": %.4f, \"p90_ms\": %.4f, "
                 "\"p99_ms\": %.4f, \"max_ms\": %.4f, \"accepted_p50_ms\": %.4f, "
                 "\"finished_p50_ms\": %.4f, \"engine_p50_ms\": %.4f, \"channels\": \"%s\"}%s\n",
                 l.concurrency, static_cast<long long>(l.calls), static_cast<long long>(l.errors),
                 l.requests_per_second, l.p50, l.p90, l.p99, l.max, l.accepted_p50, l.finished_p50,
                 l.engine_p50, channels.c_str(), i + 1 < results.size() ? "," : "");
  }
  std::fprintf(out, "]\n");
  std::fclose(out);
  return true;
}

int Fail(const absl::Status& status, int code) {
  std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"small-request latency and throughput at several concurrencies"};
  DefineFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);

  const absl::StatusOr<std::vector<int>> levels = ParseLevels(flags.concurrency_list);
  if (!levels.ok()) return Fail(levels.status(), 2);
  const absl::StatusOr<pricer::v1::PriceRequest> request = TinyRequest();
  if (!request.ok()) return Fail(request.status(), 2);
  std::unique_ptr<pricer::PricerServer> server;
  if (flags.target.empty()) {
    absl::StatusOr<std::unique_ptr<pricer::PricerServer>> started = StartInProcess(flags.devices);
    if (!started.ok()) return Fail(started.status(), 1);
    server = *std::move(started);
    flags.target = absl::StrCat("127.0.0.1:", server->port());
  }

  PrintHeader(flags, server != nullptr);
  std::vector<Level> results;
  for (int c : *levels) {
    results.push_back(RunLevel(flags.target, flags.channels == "per-thread", *request, c,
                               flags.warmup, flags.seconds));
    PrintLevel(results.back());
  }
  std::printf(
      "accepted, finished: median ms from sending the request to reading that reply; engine: "
      "median of finished.elapsed_seconds (the job from Submit to its last shard)\n");
  if (!flags.json.empty() && !WriteJson(flags.json, results, flags.channels)) {
    std::fprintf(stderr, "cannot write %s\n", flags.json.c_str());
    return 1;
  }
  return 0;
}
