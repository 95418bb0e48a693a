#include "client/cli/price_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "client/cli/run_journal.h"
#include "client/lib/error_target.h"
#include "client/lib/npy.h"
#include "client/lib/output_checks.h"
#include "client/lib/run_report.h"
#include "client/lib/statistics_list.h"
#include "common/shared_ring.h"
#include "common/status_macros.h"

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

// --shared-memory: a ring of SharedRingLayout.client_slots slots, at the
// phase that lets --full-out's direct writes go from the ring
// (NpyColumnPhase) when the request says the file's shape; else at phase 0
// (the writes then copy through their staging buffer).
void TakeThroughARing(PricerClient& client, const v1::PriceRequest& request, ColumnRange columns) {
  const int64_t width = columns.second - columns.first;
  const int32_t phase =
      request.paths() > 0 && width > 0 ? NpyColumnPhase(request.paths(), width, columns.first) : 0;
  client.SetSharedMemory(shared_ring::Layout().client_slots(), phase);
}

// The .npy files' sizes when the request says them: P x the column range,
// P x N, P x K; and every output file, to check before the call.
std::vector<OutputFile> OutputsOf(const ResultFiles& files, const v1::PriceRequest& request,
                                  ColumnRange columns) {
  const v1::Market& market = request.market();
  const int64_t issuers =
      market.has_explicit_() ? market.explicit_().spot_size() : market.generated().issuers();
  const int64_t width = columns.second - columns.first;
  // With historical returns the paths are known once the server answers.
  const int64_t paths = request.paths();
  auto npy = [paths](int64_t columns) { return paths > 0 ? NpyFileBytes(paths, columns) : 0; };
  std::vector<OutputFile> outputs = {
      {"--stats-out", files.stats_csv, 0},
      {"--full-out", files.full_npy, width > 0 ? npy(width) : 0},
      {"--prices-out", files.prices_npy, npy(issuers)},
      {"--values-out", files.values_npy, npy(request.instruments_size())}};
  // The contributions: A's rows x the columns each.
  const int64_t rows = request.instruments_size() > 0 ? request.instruments_size() : issuers;
  for (const ContributionFile& file : files.contributions) {
    const int64_t file_rows = file.per_issuer() ? issuers : rows;
    outputs.push_back(
        {"--contributions-out", file.path, width > 0 ? NpyFileBytes(file_rows, width) : 0});
  }
  return outputs;
}

// How the calls ended, and the first local file that failed while they ran
// (a write, the journal): that is the user's to fix, not the server's.
struct Outcome {
  grpc::Status call;
  absl::Status local;
};

// Sends `request`: its replies go into `results`, then into `journal`, one
// at a time; on a terminal, a progress line goes to stderr.
Outcome Send(PricerClient& client, const v1::PriceRequest& request, ColumnRange columns, int split,
             const ReceivedResults& received, PriceResults& results, RunJournal& journal) {
  std::optional<ProgressLine> progress;
  if (isatty(STDERR_FILENO)) progress.emplace(stderr);
  absl::Mutex mu;
  absl::Status journal_error;
  const auto on_reply = [&](const ReceivedReply& received) {
    const v1::PriceReply& reply = received.message;
    absl::MutexLock lock(&mu);
    if (grpc::Status s = results.OnReply(received); !s.ok()) return s;
    if (absl::Status s = journal.Record(reply, results); !s.ok()) {
      journal_error = s;
      return grpc::Status(grpc::StatusCode::CANCELLED, std::string(s.message()));
    }
    if (progress.has_value() && (reply.has_chunk() || reply.has_round())) {
      const RunProgress p = results.progress();
      progress->SetRound(p.round, p.round_paths);
      progress->Update(p.columns_done, p.columns, p.columns_priced);
    }
    return grpc::Status::OK;
  };
  Outcome outcome;
  if (columns.second > columns.first) {
    results.ExpectColumns(columns.first, columns.second);
    outcome.call =
        client.PriceSplit(request, columns.first, columns.second, split, on_reply, received);
  } else {
    outcome.call = client.Price(request, on_reply);
  }
  if (progress.has_value()) progress->Finish();
  outcome.local = journal_error.ok() ? results.file_error() : journal_error;
  return outcome;
}

// How the run ends: the files closed, the journal gone and the summary
// printed (exit code 0); or why not and whether the journal can resume it: a
// local file (2) or the call (1).
int Report(Outcome outcome, double wall_seconds, bool json, const ResultFiles& files,
           PriceResults& results, RunJournal& journal) {
  if (outcome.local.ok() && outcome.call.ok()) outcome.local = results.Finish();
  if (outcome.local.ok() && outcome.call.ok()) outcome.local = journal.Remove();
  if (outcome.local.ok() && outcome.call.ok()) {
    const RunTotals totals = results.totals();
    std::cout << (json ? SummaryJson(totals, wall_seconds, files)
                       : results.StatisticsTable() + SummaryText(totals, wall_seconds));
    return 0;
  }
  const int code = outcome.local.ok() ? Fail(outcome.call) : Refuse(outcome.local.message());
  if (journal.kept()) {
    std::cerr << "pricer: what arrived is recorded in " << journal.path()
              << "; run the same command with --resume to price only the rest\n";
  }
  return code;
}

// --stats, the errors of each statistic and a target for one of them.
void AddStatisticsFlags(CLI::App& app, PriceOptions& options, std::string& list,
                        std::optional<std::string>& error_target, std::string& contributions,
                        std::string& sensitivities) {
  app.add_option("--stats", list,
                 "statistics per column: mean, stddev, min, max, quantile:L, var:L, es:L "
                 "(comma-separated; default mean,stddev,min,max)");
  app.add_flag("--errors", options.errors,
               "also each statistic's Monte Carlo error: standard errors of mean, stddev "
               "and es, confidence intervals of quantiles and var (CSV columns mean_se, "
               "var_L_lo, var_L_hi, ...)");
  app.add_option("--error-confidence", options.error_confidence,
                 "confidence of the --errors intervals, in (0, 1) (default 0.95)");
  app.add_option("--error-target", error_target,
                 "STAT[:LEVEL]=X: price each column with --paths, then twice as many, ... "
                 "until the error of STAT (one of --stats: mean, stddev, quantile:L, var:L, "
                 "es:L) is at most X, relative to |STAT| when X ends in % (var:0.99=2%), "
                 "else absolute (mean=0.5); implies --errors; the CSV gets paths and "
                 "target_met columns");
  app.add_option("--max-paths", options.max_paths,
                 "with --error-target (required): the most paths a column may use");
  app.add_option("--contributions", contributions,
                 "es:L and var:L (comma-separated): each row's Euler contribution to the "
                 "column's ES (or VaR's window mean loss) at level L, written by "
                 "--contributions-out; the level is added to --stats' if it lacks it");
  app.add_option("--sensitivities", sensitivities,
                 "delta, vega (comma-separated): each issuer's pathwise sensitivity of each "
                 "--contributions level to its spot or volatility, written to "
                 "PREFIX.es_L.delta.npy and PREFIX.es_L.vega.npy (float32 N x M)");
  app.add_flag("--moments-from-covariance", options.moments_from_covariance,
               "mean and stddev from ST's issuer means and covariance instead of SC: 2 N^2 "
               "flops a column instead of 2 P N (pays when N < P); --stats mean and/or "
               "stddev only (the default then), no --errors or --full-out");
}

// --contributions, --sensitivities and --contributions-out into the
// request's options and the files.
absl::Status SetContributions(const std::string& list, const std::string& prefix,
                              const std::string& sensitivities, PriceOptions& options,
                              ResultFiles& files) {
  if (list.empty() != prefix.empty()) {
    return absl::InvalidArgumentError("--contributions and --contributions-out go together");
  }
  if (list.empty()) {
    if (sensitivities.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        "--sensitivities are those of --contributions' levels: give --contributions");
  }
  ASSIGN_OR_RETURN(options.contributions, ParseContributionsList(list));
  for (absl::string_view item : absl::StrSplit(sensitivities, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    if (item != "delta" && item != "vega") {
      return absl::InvalidArgumentError(
          absl::StrCat("--sensitivities: '", item, "' is not delta or vega"));
    }
    (item == "delta" ? options.delta : options.vega) = true;
  }
  files.contributions = ContributionFilesOf(prefix, options.contributions, options.errors,
                                            options.delta, options.vega);
  return absl::OkStatus();
}

// The book and the historical scenarios.
void AddBookFlags(CLI::App& app, PriceOptions& options) {
  app.add_option("--instruments-file", options.instruments_file,
                 "CSV of a book: header naming issuer (a market label or an index), type "
                 "(stock, forward, call, put), strike, expiry (years) and optionally "
                 "volatility; A then has one row per instrument");
  app.add_option("--returns-file", options.returns_file,
                 ".npy P x N historical log-returns (float32 or float64), sent inline: ST = "
                 "S0 exp(R) in place of GBM paths");
  app.add_option("--returns-set", options.returns_set,
                 "id of a P x N set of historical log-returns stored with `pricer upload`");
}

// The output files.
void AddOutputFlags(CLI::App& app, ResultFiles& files, std::string& contributions_prefix) {
  app.add_option("--stats-out", files.stats_csv, "write per-column statistics as CSV");
  app.add_option("--full-out", files.full_npy, "write SC (float32 P x M, Fortran order) .npy");
  app.add_option("--prices-out", files.prices_npy, "write ST (float32 P x N) .npy");
  app.add_option("--values-out", files.values_npy,
                 "write a book's values at the horizon V (float32 P x K) .npy");
  app.add_option("--contributions-out", contributions_prefix,
                 "PREFIX: write each --contributions level's contributions (float32 R x M, "
                 "R the issuers or instruments, Fortran order) to PREFIX.es_L.npy, and with "
                 "--errors their standard errors to PREFIX.es_L.se.npy");
}

}  // namespace

PriceCommand::PriceCommand(CLI::App& app)
    : Command(app.add_subcommand("price", "price a scenario set and write its results")) {
  CLI::App* price = verb_;
  price->add_option("--preset", options_.preset,
                    "seed: the original example (500 issuers, 10,000 paths, 1,000,000 "
                    "scenarios, seed 42); other flags override it");
  price->add_option("--issuers", options_.issuers, "generated issuers, spot U(5,10), vol U(0,1)");
  price->add_option("--market-file", options_.market_file,
                    "CSV whose header names spot and volatility (any order, other columns "
                    "ignored), and issuer or a leading unnamed index column for labels");
  price->add_option("--paths", options_.paths, "Monte Carlo paths P");
  price->add_option("--seed", options_.seed, "seed of the paths and of generated data");
  price->add_option("--rate", options_.rate, "risk-free rate per year (default 0)");
  price->add_option("--maturity", options_.maturity, "horizon in years (default 1)");
  price->add_option("--scenarios", options_.scenarios, "generated scenario columns M, U(0,1)");
  price->add_option("--scenarios-file", options_.scenarios_file,
                    ".npy R x M scenario matrix (float32 or float64; R = N, or the "
                    "instruments), sent inline");
  price->add_option("--scenario-set", options_.scenario_set,
                    "id of a scenario set stored with `pricer upload`");
  price->add_option("--column-begin", options_.column_begin, "first scenario column to price");
  price->add_option("--column-end", options_.column_end, "one past the last column to price");
  price->add_option("--chunk-columns", options_.chunk_columns, "columns per result chunk (hint)");
  AddStatisticsFlags(*price, options_, stats_list_, error_target_, contributions_list_,
                     sensitivities_list_);
  price->add_option("--correlation-file", options_.correlation_file,
                    "CSV of the N x N correlation of the issuers' shocks; with labels (a header "
                    "row, a first column), in the order of the market file's issuers");
  AddBookFlags(*price, options_);
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
  price
      ->add_option("--priority", options_.priority,
                   "scheduling priority, -100 to 100 (default 0): higher goes first; above 0 "
                   "needs a token whose max-priority allows it")
      ->check(CLI::Range(-100, 100));
  price->add_option("--timeout", timeout_,
                    "seconds the whole run may take, retries included; then exit 1 with "
                    "DEADLINE_EXCEEDED (default: none)");
  price->add_flag("--json", json_, "print the summary as one JSON object on stdout");
  price->add_flag("--shared-memory", shared_memory_,
                  "take --full-out's SC through a shared-memory ring (32 MiB) instead of the "
                  "socket: a server on this host, started with --shared-memory-output");
  AddOutputFlags(*price, files_, contributions_prefix_);
}

absl::Status PriceCommand::CheckClientFlags() const {
  if (timeout_.has_value() && !(*timeout_ > 0 && *timeout_ <= 1e9)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeout ", *timeout_, " is not a number of seconds in (0, 1e9]"));
  }
  if (shared_memory_ && files_.full_npy.empty()) {
    return absl::InvalidArgumentError("--shared-memory needs --full-out");
  }
  return absl::OkStatus();
}

int PriceCommand::Run(PricerClient& client) {
  if (const absl::Status s = CheckClientFlags(); !s.ok()) return Refuse(s.message());
  options_.full = !files_.full_npy.empty();
  options_.terminal_prices = !files_.prices_npy.empty();
  options_.instrument_values = !files_.values_npy.empty();
  if (error_target_.has_value()) {
    absl::StatusOr<ErrorTarget> target = ParseErrorTarget(*error_target_);
    if (!target.ok()) return Refuse(target.status().message());
    options_.error_target = *std::move(target);
    options_.errors = true;
  }
  const absl::Status contributions = SetContributions(contributions_list_, contributions_prefix_,
                                                      sensitivities_list_, options_, files_);
  if (!contributions.ok()) return Refuse(contributions.message());
  // Statistics unless only files of raw values were asked for (--errors
  // and contributions ask for statistics).
  if (!stats_list_.empty() || !files_.stats_csv.empty() || options_.errors ||
      !options_.contributions.empty() ||
      (!options_.full && !options_.terminal_prices && !options_.instrument_values)) {
    absl::StatusOr<std::vector<StatisticItem>> items =
        ParseStatisticsList(!stats_list_.empty()               ? stats_list_
                            : options_.moments_from_covariance ? "mean,stddev"
                                                               : "mean,stddev,min,max");
    if (!items.ok()) return Refuse(items.status().message());
    options_.statistics = *std::move(items);
  }
  absl::StatusOr<v1::PriceRequest> request = BuildPriceRequest(options_);
  if (!request.ok()) return Refuse(request.status().message());
  ColumnRange columns = RequestedColumns(*request);
  if (shared_memory_) TakeThroughARing(client, *request, columns);
  PriceResults results(files_,
                       options_.errors ? WithErrors(options_.statistics) : options_.statistics,
                       request->target());
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
  const absl::Status writable = CheckOutputFiles(OutputsOf(files_, *request, columns));
  if (!writable.ok()) return Refuse(writable.message());
  const auto start = std::chrono::steady_clock::now();
  if (timeout_.has_value()) {
    client.SetDeadline(std::chrono::system_clock::now() +
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::chrono::duration<double>(*timeout_)));
  }
  const Outcome outcome = Send(client, *request, columns, split_, received, results, journal);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Report(outcome, wall, json_, files_, results, journal);
}

}  // namespace pricer
