// pricer: the command-line client. `pricer price` sends one pricing request
// and writes its results; `pricer devices` lists the server's devices.
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "client/lib/npy.h"
#include "client/lib/price_results.h"
#include "client/lib/pricer_client.h"
#include "client/lib/request_options.h"

namespace {

// A refused or failed call: the status code and message, exit code 1.
int Fail(const grpc::Status& status) {
  const int code = static_cast<int>(status.error_code());
  // gRPC's and Abseil's status codes share their numbers and names.
  std::cerr << "pricer: " << code << " "
            << absl::StatusCodeToString(static_cast<absl::StatusCode>(code)) << ": "
            << status.error_message() << "\n";
  return 1;
}

int RunPrice(const std::string& target, const pricer::PriceOptions& options,
             const pricer::ResultFiles& files, int split) {
  absl::StatusOr<pricer::v1::PriceRequest> request = pricer::BuildPriceRequest(options);
  if (!request.ok()) {
    std::cerr << "pricer: " << request.status().message() << "\n";
    return 2;
  }
  pricer::PricerClient client(target);
  pricer::PriceResults results(files, options.statistics);
  const bool progress = isatty(STDERR_FILENO);
  const auto on_reply = [&](const pricer::v1::PriceReply& reply) {
    grpc::Status s = results.OnReply(reply);
    if (progress && reply.has_chunk()) {
      std::fprintf(stderr, "\r%lld / %lld columns",
                   static_cast<long long>(results.columns_received()),
                   static_cast<long long>(results.columns()));
    }
    return s;
  };
  const auto start = std::chrono::steady_clock::now();
  grpc::Status status;
  if (split > 1) {
    const pricer::v1::Scenarios& scenarios = request->scenarios();
    const int64_t columns = scenarios.has_matrix()      ? scenarios.matrix().columns()
                            : scenarios.has_generated() ? scenarios.generated().columns()
                                                        : 0;
    const int64_t begin = request->column_begin();
    const int64_t end = request->column_end() > 0 ? request->column_end() : columns;
    if (end <= begin) {
      std::cerr << "pricer: --split needs the column range: give --column-end with "
                   "--scenario-set\n";
      return 2;
    }
    results.ExpectColumns(begin, end);
    status = client.PriceSplit(*request, begin, end, split, on_reply);
  } else {
    status = client.Price(*request, on_reply);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (progress) std::fprintf(stderr, "\n");
  if (!status.ok()) return Fail(status);
  if (absl::Status s = results.Finish(); !s.ok()) {
    std::cerr << "pricer: " << s.message() << "\n";
    return 1;
  }
  std::cout << results.Summary(wall);
  return 0;
}

int RunUpload(const std::string& target, const std::string& file) {
  absl::StatusOr<pricer::NpyMatrix> matrix = pricer::ReadNpyMatrix(file);
  if (!matrix.ok()) {
    std::cerr << "pricer: " << matrix.status().message() << "\n";
    return 2;
  }
  pricer::PricerClient client(target);
  pricer::v1::ScenarioSet set;
  const grpc::Status status =
      client.UploadScenarios(matrix->rows, matrix->columns, matrix->values, &set);
  if (!status.ok()) return Fail(status);
  std::cout << set.id() << "\n";
  std::cerr << absl::StrFormat("%d x %d, %d bytes%s\n", set.rows(), set.columns(), set.bytes(),
                               set.existed() ? ", already stored" : "");
  return 0;
}

int RunDevices(const std::string& target, bool json) {
  pricer::PricerClient client(target);
  pricer::v1::ListDevicesReply reply;
  if (grpc::Status status = client.ListDevices(&reply); !status.ok()) return Fail(status);
  if (json) {
    std::string text;
    google::protobuf::util::JsonPrintOptions print;
    print.add_whitespace = true;
    print.always_print_primitive_fields = true;
    (void)google::protobuf::util::MessageToJsonString(reply, &text, print);
    std::cout << text;
    return 0;
  }
  std::cout << absl::StrFormat("%-10s %-6s %16s %16s %16s %12s %10s\n", "device", "kind",
                               "budget bytes", "in use bytes", "peak bytes", "shards done",
                               "busy s");
  for (const pricer::v1::DeviceInfo& d : reply.devices()) {
    std::cout << absl::StrFormat("%-10s %-6s %16d %16d %16d %12d %10.2f\n", d.name(), d.kind(),
                                 d.memory_budget_bytes(), d.bytes_in_use(), d.peak_bytes(),
                                 d.shards_done(), d.busy_seconds());
  }
  std::cout << absl::StrFormat("jobs queued or running: %d of %d; unsent chunk bytes: %d of %d\n",
                               reply.queued_jobs(), reply.max_queued_jobs(), reply.pending_bytes(),
                               reply.max_pending_bytes());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pricer: client of the pricer Monte Carlo scenario pricing service"};
  app.require_subcommand(1);
  std::string target = "localhost:50051";
  app.add_option("--target", target, "server address host:port")
      ->envname("PRICER_TARGET")
      ->capture_default_str();

  pricer::PriceOptions options;
  pricer::ResultFiles files;
  CLI::App* price = app.add_subcommand("price", "price a scenario set and write its results");
  price->add_option("--target", target, "server address host:port")->envname("PRICER_TARGET");
  price->add_option("--preset", options.preset,
                    "seed: the original example (500 issuers, 10,000 paths, 1,000,000 "
                    "scenarios, seed 42); other flags override it");
  price->add_option("--issuers", options.issuers, "generated issuers, spot U(5,10), vol U(0,1)");
  price->add_option("--market-file", options.market_file, "CSV with header spot,volatility");
  price->add_option("--paths", options.paths, "Monte Carlo paths P");
  price->add_option("--seed", options.seed, "seed of the paths and of generated data");
  price->add_option("--rate", options.rate, "risk-free rate per year (default 0)");
  price->add_option("--maturity", options.maturity, "horizon in years (default 1)");
  price->add_option("--scenarios", options.scenarios, "generated scenario columns M, U(0,1)");
  price->add_option("--scenarios-file", options.scenarios_file,
                    ".npy N x M scenario matrix (float32 or float64), sent inline");
  price->add_option("--scenario-set", options.scenario_set,
                    "id of a scenario set stored with `pricer upload`");
  price->add_option("--column-begin", options.column_begin, "first scenario column to price");
  price->add_option("--column-end", options.column_end, "one past the last column to price");
  price->add_option("--chunk-columns", options.chunk_columns, "columns per result chunk (hint)");
  std::string stats_list;
  price->add_option("--stats", stats_list,
                    "statistics per column: mean, stddev, min, max, quantile:L, var:L, es:L "
                    "(comma-separated; default mean,stddev,min,max)");
  price->add_option("--correlation-file", options.correlation_file,
                    "CSV of the N x N correlation of the issuers' shocks, no header");
  price->add_flag("--antithetic", options.antithetic,
                  "antithetic paths: path 2k+1 takes the negated shocks of path 2k");
  int split = 1;
  price
      ->add_option("--split", split,
                   "cut the column range into K parts priced concurrently, round robin over "
                   "the servers of --target (e.g. ipv4:127.0.0.1:50051,127.0.0.1:50052)")
      ->check(CLI::Range(1, 1024));
  price->add_option("--stats-out", files.stats_csv, "write per-column statistics as CSV");
  price->add_option("--full-out", files.full_npy, "write SC (float32 P x M, Fortran order) .npy");
  price->add_option("--prices-out", files.prices_npy, "write ST (float32 P x N) .npy");

  std::string upload_file;
  CLI::App* upload =
      app.add_subcommand("upload", "store an N x M scenario matrix on the server and print its id");
  upload->add_option("--target", target, "server address host:port")->envname("PRICER_TARGET");
  upload->add_option("file", upload_file, ".npy N x M matrix, float32 or float64")->required();

  bool json = false;
  CLI::App* devices = app.add_subcommand("devices", "list the server's devices");
  devices->add_option("--target", target, "server address host:port")->envname("PRICER_TARGET");
  devices->add_flag("--json", json, "print the ListDevices reply as JSON");
  CLI11_PARSE(app, argc, argv);

  if (price->parsed()) {
    options.full = !files.full_npy.empty();
    options.terminal_prices = !files.prices_npy.empty();
    // Statistics unless only files of raw values were asked for.
    if (!stats_list.empty() || !files.stats_csv.empty() ||
        (!options.full && !options.terminal_prices)) {
      absl::StatusOr<std::vector<pricer::StatisticItem>> items =
          pricer::ParseStatisticsList(stats_list.empty() ? "mean,stddev,min,max" : stats_list);
      if (!items.ok()) {
        std::cerr << "pricer: " << items.status().message() << "\n";
        return 2;
      }
      options.statistics = *std::move(items);
    }
    return RunPrice(target, options, files, split);
  }
  if (upload->parsed()) return RunUpload(target, upload_file);
  return RunDevices(target, json);
}
