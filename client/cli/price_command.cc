#include "client/cli/price_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/cli/run_journal.h"
#include "client/lib/statistics_list.h"

namespace pricer {
namespace {

// The column range [begin, end) when the request says it; end 0 when only
// the server knows it (a scenario set's column count, once it accepts it).
ColumnRange RequestedColumns(const v1::PriceRequest& request) {
  const v1::Scenarios& scenarios = request.scenarios();
  const int64_t end = request.column_end() > 0    ? request.column_end()
                      : scenarios.has_matrix()    ? scenarios.matrix().columns()
                      : scenarios.has_generated() ? scenarios.generated().columns()
                                                  : 0;
  return ColumnRange(request.column_begin(), end);
}

// Sends `request`: its replies go into `results`, then into `journal`, one
// at a time; on a terminal, the columns received so far go to stderr.
grpc::Status Send(PricerClient& client, const v1::PriceRequest& request, ColumnRange columns,
                  int split, const ReceivedResults& received, PriceResults& results,
                  RunJournal& journal) {
  const bool progress = isatty(STDERR_FILENO);
  absl::Mutex mu;
  const auto on_reply = [&](const ReceivedReply& received) {
    const v1::PriceReply& reply = received.message;
    absl::MutexLock lock(&mu);
    if (grpc::Status s = results.OnReply(received); !s.ok()) return s;
    if (absl::Status s = journal.Record(reply, results); !s.ok()) {
      return grpc::Status(grpc::StatusCode::ABORTED, std::string(s.message()));
    }
    if (progress && reply.has_chunk()) {
      std::fprintf(stderr, "\r%lld / %lld columns",
                   static_cast<long long>(results.columns_received()),
                   static_cast<long long>(results.columns()));
    }
    return grpc::Status::OK;
  };
  grpc::Status status;
  if (columns.second > columns.first) {
    results.ExpectColumns(columns.first, columns.second);
    status = client.PriceSplit(request, columns.first, columns.second, split, on_reply, received);
  } else {
    status = client.Price(request, on_reply);
  }
  if (progress) std::fprintf(stderr, "\n");
  return status;
}

// How the run that ended with `status` after `wall_seconds` ends: the files
// closed, the journal gone and the summary printed (exit code 0), or why
// not and whether the journal can resume it (1).
int Report(const grpc::Status& status, double wall_seconds, PriceResults& results,
           RunJournal& journal) {
  absl::Status finished = status.ok() ? results.Finish() : absl::OkStatus();
  if (status.ok() && finished.ok()) finished = journal.Remove();
  if (status.ok() && finished.ok()) {
    std::cout << results.Summary(wall_seconds);
    return 0;
  }
  if (!status.ok()) {
    Fail(status);
  } else {
    std::cerr << "pricer: " << finished.message() << "\n";
  }
  if (journal.kept()) {
    std::cerr << "pricer: what arrived is recorded in " << journal.path()
              << "; run the same command with --resume to price only the rest\n";
  }
  return 1;
}

}  // namespace

PriceCommand::PriceCommand(CLI::App& app, std::string& target)
    : Command(app.add_subcommand("price", "price a scenario set and write its results")) {
  CLI::App* price = verb_;
  AddTargetOption(price, target);
  price->add_option("--preset", options_.preset,
                    "seed: the original example (500 issuers, 10,000 paths, 1,000,000 "
                    "scenarios, seed 42); other flags override it");
  price->add_option("--issuers", options_.issuers, "generated issuers, spot U(5,10), vol U(0,1)");
  price->add_option("--market-file", options_.market_file, "CSV with header spot,volatility");
  price->add_option("--paths", options_.paths, "Monte Carlo paths P");
  price->add_option("--seed", options_.seed, "seed of the paths and of generated data");
  price->add_option("--rate", options_.rate, "risk-free rate per year (default 0)");
  price->add_option("--maturity", options_.maturity, "horizon in years (default 1)");
  price->add_option("--scenarios", options_.scenarios, "generated scenario columns M, U(0,1)");
  price->add_option("--scenarios-file", options_.scenarios_file,
                    ".npy N x M scenario matrix (float32 or float64), sent inline");
  price->add_option("--scenario-set", options_.scenario_set,
                    "id of a scenario set stored with `pricer upload`");
  price->add_option("--column-begin", options_.column_begin, "first scenario column to price");
  price->add_option("--column-end", options_.column_end, "one past the last column to price");
  price->add_option("--chunk-columns", options_.chunk_columns, "columns per result chunk (hint)");
  price->add_option("--stats", stats_list_,
                    "statistics per column: mean, stddev, min, max, quantile:L, var:L, es:L "
                    "(comma-separated; default mean,stddev,min,max)");
  price->add_option("--correlation-file", options_.correlation_file,
                    "CSV of the N x N correlation of the issuers' shocks, no header");
  price->add_flag("--antithetic", options_.antithetic,
                  "antithetic paths: path 2k+1 takes the negated shocks of path 2k");
  price->add_option("--precision", options_.precision,
                    "lowest GEMM precision allowed: fp32 (default), tf32 or bf16 (tensor cores "
                    "on a GPU; the cpu backend computes in fp32)");
  price
      ->add_option("--split", split_,
                   "cut the column range into K parts priced concurrently, round robin over "
                   "the servers of --target (e.g. ipv4:127.0.0.1:50051,127.0.0.1:50052)")
      ->check(CLI::Range(1, 1024));
  price->add_flag("--resume", resume_,
                  "continue an interrupted run of the same command: its journal (the first "
                  "output file + .progress) says which columns are in the files already, and "
                  "only the others are priced");
  price->add_option("--stats-out", files_.stats_csv, "write per-column statistics as CSV");
  price->add_option("--full-out", files_.full_npy, "write SC (float32 P x M, Fortran order) .npy");
  price->add_option("--prices-out", files_.prices_npy, "write ST (float32 P x N) .npy");
}

int PriceCommand::Run(PricerClient& client) {
  options_.full = !files_.full_npy.empty();
  options_.terminal_prices = !files_.prices_npy.empty();
  // Statistics unless only files of raw values were asked for.
  if (!stats_list_.empty() || !files_.stats_csv.empty() ||
      (!options_.full && !options_.terminal_prices)) {
    absl::StatusOr<std::vector<StatisticItem>> items =
        ParseStatisticsList(stats_list_.empty() ? "mean,stddev,min,max" : stats_list_);
    if (!items.ok()) return Refuse(items.status().message());
    options_.statistics = *std::move(items);
  }
  absl::StatusOr<v1::PriceRequest> request = BuildPriceRequest(options_);
  if (!request.ok()) return Refuse(request.status().message());
  ColumnRange columns = RequestedColumns(*request);
  PriceResults results(files_, options_.statistics);
  ReceivedResults received;
  RunJournal journal(*request, files_);
  if (resume_) {
    const absl::Status resumed = journal.Resume(results, received, &columns.first, &columns.second);
    if (!resumed.ok()) return Refuse(resumed.message());
  } else if (journal.exists()) {
    return Refuse(absl::StrCat(journal.path(),
                               " records an interrupted run into these files: add --resume to "
                               "continue it, or delete it to start over"));
  }
  if (columns.second <= columns.first && split_ > 1) {
    return Refuse("--split needs the column range: give --column-end with --scenario-set");
  }
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = Send(client, *request, columns, split_, received, results, journal);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Report(status, wall, results, journal);
}

}  // namespace pricer
