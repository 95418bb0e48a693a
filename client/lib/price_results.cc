#include "client/lib/price_results.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/lib/error_target.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

// The shortest decimal that reads back as the same double: the CSV carries
// the server's float64 statistics exactly.
std::string Shortest(double value) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof(text), value).ptr);
}

grpc::Status Contradiction(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INTERNAL, "the server sent " + what);
}

}  // namespace

std::vector<std::string> ResultFiles::All() const {
  std::vector<std::string> all = {full_npy, stats_csv, prices_npy, values_npy};
  for (const ContributionFile& file : contributions) all.push_back(file.path);
  return all;
}

void PriceResults::ExpectColumns(int64_t column_begin, int64_t column_end) {
  absl::MutexLock lock(&mu_);
  expected_.emplace(column_begin, column_end);
}

void PriceResults::ReopenFiles() {
  absl::MutexLock lock(&mu_);
  reopen_ = true;
}

v1::JobAccepted PriceResults::accepted() const {
  absl::MutexLock lock(&mu_);
  return accepted_;
}

int64_t PriceResults::columns_received() const {
  absl::MutexLock lock(&mu_);
  return columns_received_;
}

absl::Status PriceResults::file_error() const {
  absl::MutexLock lock(&mu_);
  return file_error_;
}

grpc::Status PriceResults::FileFailed(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  if (file_error_.ok()) file_error_ = status;
  return grpc::Status(grpc::StatusCode::CANCELLED, std::string(status.message()));
}

int64_t PriceResults::columns() const {
  absl::MutexLock lock(&mu_);
  return ColumnsLocked();
}

grpc::Status PriceResults::OnReply(const ReceivedReply& received) {
  const v1::PriceReply& reply = received.message;
  absl::MutexLock lock(&mu_);
  switch (reply.kind_case()) {
    case v1::PriceReply::kAccepted:
      return OnAccepted(reply.accepted());
    case v1::PriceReply::kChunk:
      return OnChunk(reply.chunk(), &received);
    case v1::PriceReply::kPrices:
      return OnPathColumns(prices_, reply.prices().issuer_begin(), reply.prices().issuer_end(),
                           accepted_.issuers(), reply.prices().rows(), received.values,
                           "a terminal-prices chunk of issuers");
    case v1::PriceReply::kValues:
      return OnPathColumns(book_values_, reply.values().instrument_begin(),
                           reply.values().instrument_end(), accepted_.instruments(),
                           reply.values().rows(), received.values,
                           "an instrument-values chunk of instruments");
    case v1::PriceReply::kFinished:
      OnFinished(reply.finished());
      return grpc::Status::OK;
    case v1::PriceReply::kRound:
      return OnRound(reply.round());
    case v1::PriceReply::KIND_NOT_SET:
      break;
  }
  return Contradiction("a reply of an unknown kind");
}

// Parts add up: work and bytes sum, the wall time is the longest part's.
void PriceResults::OnFinished(const v1::JobFinished& part) {
  if (!finished_.has_value()) {
    finished_ = part;
    return;
  }
  finished_->set_elapsed_seconds(std::max(finished_->elapsed_seconds(), part.elapsed_seconds()));
  finished_->set_flops(finished_->flops() + part.flops());
  finished_->set_bytes(finished_->bytes() + part.bytes());
  finished_->set_gemm_seconds(finished_->gemm_seconds() + part.gemm_seconds());
  finished_->set_statistics_seconds(finished_->statistics_seconds() + part.statistics_seconds());
}

grpc::Status PriceResults::Restore(const v1::PriceReply& reply) {
  absl::MutexLock lock(&mu_);
  if (reply.has_accepted()) return OnAccepted(reply.accepted());
  if (reply.has_chunk()) return OnChunk(reply.chunk(), nullptr);
  if (reply.has_prices() || reply.has_values()) return grpc::Status::OK;  // nothing but values
  return Contradiction("a journal record of another kind");
}

grpc::Status PriceResults::OnAccepted(const v1::JobAccepted& accepted) {
  if (started_) {
    // Another part of a split request: the same model, inside the range.
    if (accepted.paths() != accepted_.paths() || accepted.issuers() != accepted_.issuers() ||
        accepted.column_begin() < accepted_.column_begin() ||
        accepted.column_end() > accepted_.column_end()) {
      return Contradiction("parts of one request with different shapes");
    }
    return grpc::Status::OK;
  }
  started_ = true;
  accepted_ = accepted;
  if (expected_.has_value()) {
    accepted_.set_column_begin(expected_->first);
    accepted_.set_column_end(expected_->second);
  }
  const int64_t n = ColumnsLocked();
  const auto open = reopen_ ? NpyColumnWriter::OpenExisting : NpyColumnWriter::Create;
  if (!files_.full_npy.empty()) {
    absl::StatusOr<NpyColumnWriter> writer = open(files_.full_npy, accepted.paths(), n);
    if (!writer.ok()) return FileFailed(writer.status());
    full_.emplace(*std::move(writer));
  }
  for (auto [path, columns, writer] :
       {std::tuple{&files_.prices_npy, accepted.issuers(), &prices_},
        std::tuple{&files_.values_npy, accepted.instruments(), &book_values_}}) {
    if (path->empty()) continue;
    absl::StatusOr<NpyColumnWriter> opened = open(*path, accepted.paths(), columns);
    if (!opened.ok()) return FileFailed(opened.status());
    writer->emplace(*std::move(opened));
  }
  const int64_t rows = accepted.instruments() > 0 ? accepted.instruments() : accepted.issuers();
  if (absl::Status s = contributions_.Open(reopen_, rows, accepted.issuers(), n); !s.ok()) {
    return FileFailed(s);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  v0_.assign(static_cast<size_t>(n), nan);
  values_.assign(items_.size(), std::vector<double>(static_cast<size_t>(n), nan));
  if (Targeted(target_)) {
    paths_.assign(static_cast<size_t>(n), 0);
    met_.assign(static_cast<size_t>(n), false);
  }
  return grpc::Status::OK;
}

// Rounds of several parts interleave: the progress line shows the latest.
grpc::Status PriceResults::OnRound(const v1::RoundStarted& round) {
  if (!started_ || !Targeted(target_) || round.round() < 0 || round.round() > 40 ||
      round.paths() != accepted_.paths() << round.round() ||
      !IsTargetPathCount(round.paths(), accepted_.paths(), target_)) {
    return Contradiction(absl::StrCat("a round ", round.round(), " of ", round.paths(),
                                      " paths that the request does not have"));
  }
  if (!round_.has_value() || round.round() >= round_->round()) round_ = round;
  return grpc::Status::OK;
}

grpc::Status PriceResults::CheckRows(const v1::ResultChunk& chunk) const {
  const int64_t paths = accepted_.paths();
  if (Targeted(target_) ? IsTargetPathCount(chunk.rows(), paths, target_) : chunk.rows() == paths) {
    return grpc::Status::OK;
  }
  return Contradiction(absl::StrCat(
      "a chunk of columns [", chunk.column_begin(), ", ", chunk.column_end(), ") of ", chunk.rows(),
      " rows for ", paths, " paths",
      Targeted(target_) ? absl::StrCat(" (not ", paths, " x 2^k <= ", target_.max_paths(), ")")
                        : ""));
}

grpc::Status PriceResults::OnChunk(const v1::ResultChunk& chunk, const ReceivedReply* received) {
  const ValueBytes* values = received != nullptr ? &received->values : nullptr;
  const int64_t begin = chunk.column_begin() - accepted_.column_begin();
  const int64_t count = chunk.column_end() - chunk.column_begin();
  if (begin < 0 || count <= 0 || begin + count > ColumnsLocked()) {
    return Contradiction(absl::StrCat("a chunk of columns [", chunk.column_begin(), ", ",
                                      chunk.column_end(), ") outside the accepted range"));
  }
  if (grpc::Status s = CheckRows(chunk); !s.ok()) return s;
  if (full_.has_value() && values != nullptr) {
    if (values->size() != chunk.rows() * count * 4) {
      return Contradiction(absl::StrCat("a chunk of ", values->size(), " bytes for ", count,
                                        " columns of ", chunk.rows(), " rows"));
    }
    if (absl::Status s = full_->WriteColumns(begin, count, values->pieces()); !s.ok()) {
      return FileFailed(s);
    }
  }
  if (received != nullptr) {
    const absl::Status s = contributions_.Write(chunk, received->contributions, begin, count);
    if (absl::IsInternal(s)) return Contradiction(std::string(s.message()));
    if (!s.ok()) return FileFailed(s);
  }
  if (chunk.has_statistics() || Targeted(target_)) {
    if (grpc::Status s = KeepStatistics(chunk, begin); !s.ok()) return s;
  }
  columns_received_ += count;
  if (values == nullptr) {
    columns_restored_ += count;
  } else {
    // A column priced with 4P paths in its third round took P + 2P + 4P.
    const int64_t rows = chunk.rows();
    path_columns_ += count * (Targeted(target_) ? 2 * rows - accepted_.paths() : rows);
  }
  return grpc::Status::OK;
}

grpc::Status PriceResults::KeepStatistics(const v1::ResultChunk& chunk, int64_t begin) {
  const v1::ColumnStatistics& s = chunk.statistics();
  const int64_t count = chunk.column_end() - chunk.column_begin();
  if (s.v0_size() != count) return Contradiction("statistics arrays of the wrong length");
  std::copy(s.v0().begin(), s.v0().end(), v0_.begin() + begin);
  for (size_t i = 0; i < items_.size(); ++i) {
    const google::protobuf::RepeatedField<double>* values = ValuesOf(s, items_[i]);
    if (values == nullptr || values->size() != count) {
      return Contradiction(absl::StrCat("no ", items_[i].name, " for ", count, " columns"));
    }
    std::copy(values->begin(), values->end(), values_[i].begin() + begin);
  }
  if (Targeted(target_)) {
    if (s.target_met_size() != count) {
      return Contradiction(absl::StrCat("no target_met for ", count, " columns"));
    }
    std::fill_n(paths_.begin() + begin, count, chunk.rows());
    std::copy(s.target_met().begin(), s.target_met().end(), met_.begin() + begin);
  }
  has_statistics_ = true;
  return grpc::Status::OK;
}

grpc::Status PriceResults::OnPathColumns(std::optional<NpyColumnWriter>& writer, int64_t begin,
                                         int64_t end, int64_t columns, int64_t rows,
                                         const ValueBytes& values, absl::string_view what) {
  if (!writer.has_value()) return grpc::Status::OK;
  const int64_t count = end - begin;
  if (begin < 0 || count <= 0 || end > columns || values.size() != rows * count * 4) {
    return Contradiction(absl::StrCat(what, " [", begin, ", ", end, ") that does not fit"));
  }
  return FileFailed(writer->WriteColumns(begin, count, values.pieces()));
}

absl::Status PriceResults::Finish() {
  absl::MutexLock lock(&mu_);
  for (std::optional<NpyColumnWriter>* writer : {&full_, &prices_, &book_values_}) {
    if (writer->has_value()) RETURN_IF_ERROR((*writer)->Close());
  }
  RETURN_IF_ERROR(contributions_.Close());
  if (files_.stats_csv.empty()) return absl::OkStatus();
  if (!has_statistics_) {
    return absl::FailedPreconditionError("no statistics arrived to write to " + files_.stats_csv);
  }
  std::ofstream out(files_.stats_csv);
  out << "column,v0";
  for (const StatisticItem& item : items_) out << "," << item.name;
  const bool targeted = Targeted(target_);
  out << (targeted ? ",paths,target_met\n" : "\n");
  for (int64_t k = 0; k < ColumnsLocked(); ++k) {
    out << accepted_.column_begin() + k << "," << Shortest(v0_[k]);
    for (const std::vector<double>& values : values_) out << "," << Shortest(values[k]);
    if (targeted) out << "," << paths_[k] << "," << (met_[k] ? 1 : 0);
    out << "\n";
  }
  out.close();
  if (!out) return absl::InternalError("cannot write " + files_.stats_csv);
  return absl::OkStatus();
}

RunTotals PriceResults::totals() const {
  absl::MutexLock lock(&mu_);
  RunTotals totals;
  totals.column_begin = accepted_.column_begin();
  totals.column_end = accepted_.column_end();
  totals.columns_priced = columns_received_ - columns_restored_;
  totals.columns_from_journal = columns_restored_;
  totals.paths = accepted_.paths();
  totals.issuers = accepted_.issuers();
  totals.instruments = accepted_.instruments();
  if (finished_.has_value()) {
    totals.server_seconds = finished_->elapsed_seconds();
    totals.gemm_seconds = finished_->gemm_seconds();
    totals.statistics_seconds = finished_->statistics_seconds();
  }
  totals.path_columns = path_columns_;
  if (Targeted(target_)) {
    totals.target = DescribeTarget(target_);
    for (size_t k = 0; k < paths_.size(); ++k) {
      if (paths_[k] == 0) continue;  // not arrived
      ++totals.columns_by_paths[paths_[k]];
      totals.columns_met += met_[k] ? 1 : 0;
    }
  }
  if (round_.has_value()) {
    totals.round = round_->round();
    totals.round_paths = round_->paths();
  }
  return totals;
}

RunProgress PriceResults::progress() const {
  absl::MutexLock lock(&mu_);
  RunProgress progress;
  progress.columns = ColumnsLocked();
  progress.columns_done = columns_received_;
  progress.columns_priced = columns_received_ - columns_restored_;
  if (round_.has_value()) {
    progress.round = round_->round();
    progress.round_paths = round_->paths();
  }
  return progress;
}

std::string PriceResults::StatisticsTable() const {
  absl::MutexLock lock(&mu_);
  std::string text;
  const int64_t n = ColumnsLocked();
  if (!has_statistics_ || n == 0) return text;
  // With a target: from P to the most any column took.
  const int64_t most = paths_.empty() ? 0 : *std::max_element(paths_.begin(), paths_.end());
  const std::string paths = most > accepted_.paths()
                                ? absl::StrCat(accepted_.paths(), " to ", most, " paths per column")
                                : absl::StrCat(accepted_.paths(), " paths");
  absl::StrAppend(&text, "statistics over ", paths,
                  " (mean, stddev, min, max, quantiles: of SC[:, j], the value of "
                  "column j at maturity; var, es: of the PnL, positive for a loss):\n");
  absl::StrAppend(&text, absl::StrFormat("  %10s %14s", "column", "v0"));
  for (const StatisticItem& item : items_) {
    absl::StrAppend(&text, absl::StrFormat(" %14s", item.name));
  }
  absl::StrAppend(&text, "\n");
  auto row = [&](const std::string& label, auto value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::StrAppend(&text, absl::StrFormat("  %10s %14.4f", label, value(v0_)));
    for (const std::vector<double>& values : values_) {
      absl::StrAppend(&text, absl::StrFormat(" %14.4f", value(values)));
    }
    absl::StrAppend(&text, "\n");
  };
  for (int64_t k = 0; k < std::min<int64_t>(n, 5); ++k) {
    row(absl::StrCat(accepted_.column_begin() + k),
        [&](const std::vector<double>& values) { return values[k]; });
  }
  if (n > 5) absl::StrAppend(&text, absl::StrFormat("  %10s\n", "..."));
  row("average", [&](const std::vector<double>& values) {
    double sum = 0;
    for (double v : values) sum += v;
    return sum / static_cast<double>(n);
  });
  return text;
}

}  // namespace pricer
