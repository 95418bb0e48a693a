// pricer: the command-line client. `pricer price` sends one pricing request
// and writes its results; `pricer devices` lists the server's devices;
// `pricer health` asks whether the server is serving.
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "client/lib/connection.h"
#include "client/lib/npy.h"
#include "client/lib/price_results.h"
#include "client/lib/pricer_client.h"
#include "client/lib/progress_journal.h"
#include "client/lib/request_options.h"
#include "pricer/version.h"

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

// The journal of one `pricer price` run (progress_journal.h), next to its
// first output file that is a regular file; none without one (nothing to
// resume into /dev/null). It starts once the first `accepted`
// has created the files, takes each reply after its values are in them, and
// goes when the run succeeds.
class RunJournal {
 public:
  RunJournal(const pricer::v1::PriceRequest& request, const pricer::ResultFiles& files)
      : fingerprint_(pricer::ProgressJournal::Fingerprint(
            request, {files.full_npy, files.stats_csv, files.prices_npy})) {
    for (const std::string* file : {&files.full_npy, &files.stats_csv, &files.prices_npy}) {
      const bool sink = std::filesystem::exists(*file) && !std::filesystem::is_regular_file(*file);
      if (path_.empty() && !file->empty() && !sink) path_ = *file + ".progress";
    }
  }

  const std::string& path() const { return path_; }
  bool exists() const { return !path_.empty() && std::filesystem::exists(path_); }
  // Whether a failed run leaves something to resume.
  bool kept() const { return journal_.has_value(); }

  // Reads the journal of an interrupted run back: the files reopen in place,
  // the statistics and columns recorded go into `results` and `received`,
  // and the run's whole column range into [*begin, *end).
  absl::Status Resume(pricer::PriceResults& results, pricer::ReceivedResults& received,
                      int64_t* begin, int64_t* end) {
    if (path_.empty()) {
      return absl::InvalidArgumentError(
          "--resume needs the output files of the interrupted run (--full-out, --stats-out, "
          "--prices-out)");
    }
    std::vector<pricer::v1::PriceReply> records;
    absl::StatusOr<pricer::ProgressJournal> journal =
        pricer::ProgressJournal::Resume(path_, fingerprint_, &records);
    if (!journal.ok()) return journal.status();
    // Killed before the first record: nothing to keep, the journal starts over.
    if (records.empty() || !records.front().has_accepted()) return absl::OkStatus();
    journal_.emplace(*std::move(journal));
    started_ = true;
    const pricer::v1::JobAccepted& accepted = records.front().accepted();
    *begin = accepted.column_begin();
    *end = accepted.column_end();
    received.issuers = accepted.issuers();
    results.ExpectColumns(*begin, *end);
    results.ReopenFiles();
    for (const pricer::v1::PriceReply& record : records) {
      if (grpc::Status s = results.Restore(record); !s.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(path_, ": ", s.error_message()));
      }
      if (record.has_chunk()) {
        received.columns.Add(record.chunk().column_begin(), record.chunk().column_end());
      } else if (record.has_prices()) {
        received.prices.Add(record.prices().issuer_begin(), record.prices().issuer_end());
      }
    }
    return absl::OkStatus();
  }

  // Records `reply`, which `results` has taken. Not thread-safe.
  absl::Status Record(const pricer::v1::PriceReply& reply, const pricer::PriceResults& results) {
    if (path_.empty()) return absl::OkStatus();
    if (!started_) {
      // The first `accepted`: the journal starts with the whole range, which
      // a resumed run reopens the files with.
      absl::StatusOr<pricer::ProgressJournal> created =
          pricer::ProgressJournal::Create(path_, fingerprint_);
      if (!created.ok()) return created.status();
      journal_.emplace(*std::move(created));
      started_ = true;
      pricer::v1::PriceReply whole;
      *whole.mutable_accepted() = results.accepted();
      if (absl::Status s = journal_->Append(whole); !s.ok()) return s;
    }
    if (!reply.has_chunk() && !reply.has_prices()) return absl::OkStatus();
    return journal_->Append(reply);
  }

  absl::Status Remove() {
    if (!journal_.has_value()) return absl::OkStatus();
    absl::Status s = journal_->Remove();
    journal_.reset();
    return s;
  }

 private:
  std::string path_;
  const std::string fingerprint_;
  std::optional<pricer::ProgressJournal> journal_;
  bool started_ = false;  // the journal holds the `accepted` of the whole range
};

int RunPrice(pricer::PricerClient& client, const pricer::PriceOptions& options,
             const pricer::ResultFiles& files, int split, bool resume) {
  absl::StatusOr<pricer::v1::PriceRequest> request = pricer::BuildPriceRequest(options);
  if (!request.ok()) {
    std::cerr << "pricer: " << request.status().message() << "\n";
    return 2;
  }
  // The column range, when the request says it (a scenario set's column
  // count is known only once the server accepts the request).
  const pricer::v1::Scenarios& scenarios = request->scenarios();
  int64_t begin = request->column_begin();
  int64_t end = request->column_end() > 0   ? request->column_end()
                : scenarios.has_matrix()    ? scenarios.matrix().columns()
                : scenarios.has_generated() ? scenarios.generated().columns()
                                            : 0;
  pricer::PriceResults results(files, options.statistics);
  pricer::ReceivedResults received;
  RunJournal journal(*request, files);
  if (resume) {
    if (absl::Status s = journal.Resume(results, received, &begin, &end); !s.ok()) {
      std::cerr << "pricer: " << s.message() << "\n";
      return 2;
    }
  } else if (journal.exists()) {
    std::cerr << "pricer: " << journal.path()
              << " records an interrupted run into these files: add --resume to continue it, "
                 "or delete it to start over\n";
    return 2;
  }

  const bool progress = isatty(STDERR_FILENO);
  std::mutex mu;  // one reply at a time: into the files, then into the journal
  const auto on_reply = [&](const pricer::v1::PriceReply& reply) {
    std::lock_guard lock(mu);
    if (grpc::Status s = results.OnReply(reply); !s.ok()) return s;
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
  const auto start = std::chrono::steady_clock::now();
  grpc::Status status;
  if (end > begin) {
    results.ExpectColumns(begin, end);
    status = client.PriceSplit(*request, begin, end, split, on_reply, received);
  } else if (split > 1) {
    std::cerr << "pricer: --split needs the column range: give --column-end with "
                 "--scenario-set\n";
    return 2;
  } else {
    status = client.Price(*request, on_reply);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (progress) std::fprintf(stderr, "\n");
  absl::Status finished = status.ok() ? results.Finish() : absl::OkStatus();
  if (status.ok() && finished.ok()) finished = journal.Remove();
  if (!status.ok() || !finished.ok()) {
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
  std::cout << results.Summary(wall);
  return 0;
}

int RunUpload(pricer::PricerClient& client, const std::string& file) {
  absl::StatusOr<pricer::NpyMatrix> matrix = pricer::ReadNpyMatrix(file);
  if (!matrix.ok()) {
    std::cerr << "pricer: " << matrix.status().message() << "\n";
    return 2;
  }
  pricer::v1::ScenarioSet set;
  const grpc::Status status =
      client.UploadScenarios(matrix->rows, matrix->columns, matrix->values, &set);
  if (!status.ok()) return Fail(status);
  std::cout << set.id() << "\n";
  std::cerr << absl::StrFormat("%d x %d, %d bytes%s\n", set.rows(), set.columns(), set.bytes(),
                               set.existed() ? ", already stored" : "");
  return 0;
}

int RunDevices(pricer::PricerClient& client, bool json) {
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
  std::cout << "server version: "
            << (reply.server_version().empty() ? "not reported" : reply.server_version()) << "\n";
  std::cout << absl::StrFormat("%-10s %-6s %16s %16s %16s %12s %10s\n", "device", "kind",
                               "budget bytes", "in use bytes", "peak bytes", "shards done",
                               "busy s");
  for (const pricer::v1::DeviceInfo& d : reply.devices()) {
    std::cout << absl::StrFormat("%-10s %-6s %16d %16d %16d %12d %10.2f\n", d.name(), d.kind(),
                                 d.memory_budget_bytes(), d.bytes_in_use(), d.peak_bytes(),
                                 d.shards_done(), d.busy_seconds());
    if (!d.lost().empty()) std::cout << "  lost: " << d.lost() << "\n";
  }
  std::cout << absl::StrFormat("jobs queued or running: %d of %d; unsent chunk bytes: %d of %d\n",
                               reply.queued_jobs(), reply.max_queued_jobs(), reply.pending_bytes(),
                               reply.max_pending_bytes());
  return 0;
}

// What a container's HEALTHCHECK runs: exit 0 only when `service` is serving.
int RunHealth(pricer::PricerClient& client, const std::string& service) {
  grpc::health::v1::HealthCheckResponse::ServingStatus status;
  if (grpc::Status s = client.Health(service, &status); !s.ok()) return Fail(s);
  std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(status) << "\n";
  return status == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

// The token: the file --token-file (or PRICER_TOKEN_FILE) names, else
// PRICER_TOKEN, which holds the token itself; none when neither is given.
absl::StatusOr<std::string> ReadToken(const std::string& token_file) {
  if (!token_file.empty()) return pricer::ReadTokenFile(token_file);
  const char* token = std::getenv("PRICER_TOKEN");
  return std::string(absl::StripAsciiWhitespace(token == nullptr ? "" : token));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pricer: client of the pricer Monte Carlo scenario pricing service"};
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       absl::StrCat("pricer ", pricer::kVersion, " (", pricer::kBuildOptions, ")"));
  // The verbs inherit this: a flag of the app may follow the verb too
  // (`pricer price --token-file t ...`).
  app.fallthrough();
  std::string target = "localhost:50051";
  app.add_option("--target", target, "server address host:port")
      ->envname("PRICER_TARGET")
      ->capture_default_str();

  // How to reach the server: before or after the verb, on every verb.
  pricer::ConnectionOptions connection;
  constexpr char kConnection[] = "Connection (before or after the verb)";
  app.add_option("--tls-ca", connection.tls_ca_file,
                 "connect with TLS; PEM file of the roots that verify the server's certificate "
                 "(default: the system roots)")
      ->group(kConnection);
  app.add_option("--tls-cert", connection.tls_cert_file,
                 "connect with TLS; PEM file of this client's certificate chain, for a server "
                 "that asks for one (mutual TLS; with --tls-key)")
      ->group(kConnection);
  app.add_option("--tls-key", connection.tls_key_file, "PEM file of the private key of --tls-cert")
      ->group(kConnection);
  app.add_option("--tls-server-name", connection.tls_server_name,
                 "connect with TLS; the name to check in the server's certificate instead of "
                 "the host of --target (e.g. when the target is an IP address)")
      ->group(kConnection);
  std::string token_file;
  app.add_option("--token-file", token_file,
                 "file holding the bearer token sent with every call (surrounding whitespace "
                 "trimmed); without it, the environment variable PRICER_TOKEN holds the token "
                 "itself")
      ->envname("PRICER_TOKEN_FILE")
      ->group(kConnection);

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
  price->add_option("--precision", options.precision,
                    "lowest GEMM precision allowed: fp32 (default), tf32 or bf16 (tensor cores "
                    "on a GPU; the cpu backend computes in fp32)");
  int split = 1;
  price
      ->add_option("--split", split,
                   "cut the column range into K parts priced concurrently, round robin over "
                   "the servers of --target (e.g. ipv4:127.0.0.1:50051,127.0.0.1:50052)")
      ->check(CLI::Range(1, 1024));
  bool resume = false;
  price->add_flag("--resume", resume,
                  "continue an interrupted run of the same command: its journal (the first "
                  "output file + .progress) says which columns are in the files already, and "
                  "only the others are priced");
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

  std::string service;
  CLI::App* health = app.add_subcommand(
      "health",
      "ask the server's health service whether SERVICE is serving: prints SERVING, NOT_SERVING, "
      "SERVICE_UNKNOWN or UNKNOWN; exit 0 only when SERVING (needs no token)");
  health->add_option("--service", service,
                     "the service asked about: \"\" (default) for the server, pricer.v1.Pricer "
                     "for the pricing service");

  for (CLI::App* verb : app.get_subcommands({})) {
    verb->footer(
        "Connection flags, before or after the verb (see pricer --help): --target, --tls-ca, "
        "--tls-cert, --tls-key, --tls-server-name, --token-file.");
  }
  CLI11_PARSE(app, argc, argv);

  absl::StatusOr<std::string> token = ReadToken(token_file);
  if (!token.ok()) {
    std::cerr << "pricer: " << token.status().message() << "\n";
    return 2;
  }
  connection.token = *std::move(token);
  pricer::PricerClient client(target, connection);

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
    return RunPrice(client, options, files, split, resume);
  }
  if (upload->parsed()) return RunUpload(client, upload_file);
  if (health->parsed()) return RunHealth(client, service);
  return RunDevices(client, json);
}
