#include "client/lib/price_results.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pricer {
namespace {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::ABORTED, std::string(status.message()));
}

grpc::Status Contradiction(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INTERNAL, "the server sent " + what);
}

}  // namespace

grpc::Status PriceResults::OnReply(const v1::PriceReply& reply) {
  switch (reply.kind_case()) {
    case v1::PriceReply::kAccepted:
      return OnAccepted(reply.accepted());
    case v1::PriceReply::kChunk:
      return OnChunk(reply.chunk());
    case v1::PriceReply::kPrices:
      return OnPrices(reply.prices());
    case v1::PriceReply::kFinished:
      finished_ = reply.finished();
      return grpc::Status::OK;
    case v1::PriceReply::KIND_NOT_SET:
      break;
  }
  return Contradiction("a reply of an unknown kind");
}

grpc::Status PriceResults::OnAccepted(const v1::JobAccepted& accepted) {
  accepted_ = accepted;
  const int64_t n = columns();
  if (!files_.full_npy.empty()) {
    absl::StatusOr<NpyColumnWriter> writer =
        NpyColumnWriter::Create(files_.full_npy, accepted.paths(), n);
    if (!writer.ok()) return ToGrpc(writer.status());
    full_.emplace(*std::move(writer));
  }
  if (!files_.prices_npy.empty()) {
    absl::StatusOr<NpyColumnWriter> writer =
        NpyColumnWriter::Create(files_.prices_npy, accepted.paths(), accepted.issuers());
    if (!writer.ok()) return ToGrpc(writer.status());
    prices_.emplace(*std::move(writer));
  }
  for (auto* field : {statistics_.mutable_mean(), statistics_.mutable_stddev(),
                      statistics_.mutable_min(), statistics_.mutable_max()}) {
    field->Resize(static_cast<int>(n), std::numeric_limits<double>::quiet_NaN());
  }
  return grpc::Status::OK;
}

grpc::Status PriceResults::OnChunk(const v1::ResultChunk& chunk) {
  const int64_t begin = chunk.column_begin() - accepted_.column_begin();
  const int64_t count = chunk.column_end() - chunk.column_begin();
  if (begin < 0 || count <= 0 || begin + count > columns() || chunk.rows() != accepted_.paths()) {
    return Contradiction(absl::StrCat("a chunk of columns [", chunk.column_begin(), ", ",
                                      chunk.column_end(), ") outside the accepted range"));
  }
  if (full_.has_value()) {
    if (static_cast<int64_t>(chunk.values().size()) != chunk.rows() * count * 4) {
      return Contradiction(absl::StrCat("a chunk of ", chunk.values().size(), " bytes for ", count,
                                        " columns of ", chunk.rows(), " rows"));
    }
    if (absl::Status s = full_->WriteColumns(begin, count,
                                             reinterpret_cast<const float*>(chunk.values().data()));
        !s.ok()) {
      return ToGrpc(s);
    }
  }
  if (chunk.has_statistics()) {
    const v1::ColumnStatistics& s = chunk.statistics();
    if (s.mean_size() != count || s.stddev_size() != count || s.min_size() != count ||
        s.max_size() != count) {
      return Contradiction("statistics arrays of the wrong length");
    }
    has_statistics_ = true;
    std::copy(s.mean().begin(), s.mean().end(), statistics_.mutable_mean()->begin() + begin);
    std::copy(s.stddev().begin(), s.stddev().end(), statistics_.mutable_stddev()->begin() + begin);
    std::copy(s.min().begin(), s.min().end(), statistics_.mutable_min()->begin() + begin);
    std::copy(s.max().begin(), s.max().end(), statistics_.mutable_max()->begin() + begin);
  }
  columns_received_ += count;
  return grpc::Status::OK;
}

grpc::Status PriceResults::OnPrices(const v1::TerminalPricesChunk& chunk) {
  if (!prices_.has_value()) return grpc::Status::OK;
  const int64_t count = chunk.issuer_end() - chunk.issuer_begin();
  if (chunk.issuer_begin() < 0 || count <= 0 || chunk.issuer_end() > accepted_.issuers() ||
      static_cast<int64_t>(chunk.values().size()) != chunk.rows() * count * 4) {
    return Contradiction(absl::StrCat("a terminal-prices chunk of issuers [", chunk.issuer_begin(),
                                      ", ", chunk.issuer_end(), ") that does not fit"));
  }
  return ToGrpc(prices_->WriteColumns(chunk.issuer_begin(), count,
                                      reinterpret_cast<const float*>(chunk.values().data())));
}

absl::Status PriceResults::Finish() {
  for (std::optional<NpyColumnWriter>* writer : {&full_, &prices_}) {
    if (writer->has_value()) {
      if (absl::Status s = (*writer)->Close(); !s.ok()) return s;
    }
  }
  if (files_.stats_csv.empty()) return absl::OkStatus();
  if (!has_statistics_) {
    return absl::FailedPreconditionError("no statistics arrived to write to " + files_.stats_csv);
  }
  std::ofstream out(files_.stats_csv);
  out << "column,mean,stddev,min,max\n";
  for (int64_t k = 0; k < columns(); ++k) {
    const int i = static_cast<int>(k);
    out << absl::StrFormat("%d,%.10g,%.10g,%.10g,%.10g\n", accepted_.column_begin() + k,
                           statistics_.mean(i), statistics_.stddev(i), statistics_.min(i),
                           statistics_.max(i));
  }
  out.close();
  if (!out) return absl::InternalError("cannot write " + files_.stats_csv);
  return absl::OkStatus();
}

std::string PriceResults::Summary(double wall_seconds) const {
  std::string text;
  const int64_t n = columns();
  if (has_statistics_ && n > 0) {
    absl::StrAppend(&text,
                    "statistics of SC[:, j], the value of scenario column j at maturity, over ",
                    accepted_.paths(), " paths:\n");
    absl::StrAppend(&text, absl::StrFormat("  %10s %14s %14s %14s %14s\n", "column", "mean",
                                           "stddev", "min", "max"));
    for (int64_t k = 0; k < std::min<int64_t>(n, 5); ++k) {
      const int i = static_cast<int>(k);
      absl::StrAppend(
          &text, absl::StrFormat("  %10d %14.4f %14.4f %14.4f %14.4f\n",
                                 accepted_.column_begin() + k, statistics_.mean(i),
                                 statistics_.stddev(i), statistics_.min(i), statistics_.max(i)));
    }
    if (n > 5) absl::StrAppend(&text, absl::StrFormat("  %10s\n", "..."));
    double mean_sum = 0, stddev_sum = 0;
    double lowest = std::numeric_limits<double>::infinity(), highest = -lowest;
    for (int i = 0; i < static_cast<int>(n); ++i) {
      mean_sum += statistics_.mean(i);
      stddev_sum += statistics_.stddev(i);
      lowest = std::min(lowest, statistics_.min(i));
      highest = std::max(highest, statistics_.max(i));
    }
    absl::StrAppend(&text,
                    absl::StrFormat("  across %d columns: average mean %.4f, average stddev %.4f, "
                                    "lowest min %.4f, highest max %.4f\n",
                                    n, mean_sum / n, stddev_sum / n, lowest, highest));
  }
  const double flops = finished_.has_value() ? finished_->flops() : 0.0;
  const double server_seconds = finished_.has_value() ? finished_->elapsed_seconds() : 0.0;
  absl::StrAppend(&text, absl::StrFormat("priced %d columns x %d paths x %d issuers in %.3f s "
                                         "(server %.3f s): %.1f GFLOP/s\n",
                                         n, accepted_.paths(), accepted_.issuers(), wall_seconds,
                                         server_seconds, flops / wall_seconds / 1e9));
  return text;
}

}  // namespace pricer
