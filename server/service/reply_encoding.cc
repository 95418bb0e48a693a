#include "server/service/reply_encoding.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/support/slice.h>

#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "server/model/attribution.h"

namespace pricer {
namespace {

using google::protobuf::internal::WireFormatLite;

// A slice over `owner`'s bytes that deletes `owner` once gRPC is done with it.
template <typename T>
grpc::Slice OwningSlice(std::unique_ptr<T> owner, void* data, size_t size) {
  return grpc::Slice(
      data, size, [](void* p) { delete static_cast<T*>(p); }, owner.release());
}

grpc::Slice StringSlice(std::string bytes) {
  auto owner = std::make_unique<std::string>(std::move(bytes));
  char* data = owner->data();
  const size_t size = owner->size();
  return OwningSlice(std::move(owner), data, size);
}

// The column range of a chunk of ST's or V's columns.
void SetColumns(const ResultChunk& chunk, v1::TerminalPricesChunk* out) {
  out->set_issuer_begin(chunk.begin);
  out->set_issuer_end(chunk.end);
}
void SetColumns(const ResultChunk& chunk, v1::InstrumentValuesChunk* out) {
  out->set_instrument_begin(chunk.begin);
  out->set_instrument_end(chunk.end);
}

// A chunk of ST's or V's columns into its message, with `size` bytes of
// values.
template <typename Message>
void ToPathColumns(const ResultChunk& chunk, const char* bytes, size_t size, Message* out) {
  SetColumns(chunk, out);
  out->set_rows(chunk.rows);
  if (size > 0) out->set_values(bytes, size);
}

// Level `l` of `blocks` without its arrays: which level, its band's paths
// (`bands`: ContributionBands), and the blocks' shapes.
v1::Contributions ContributionsHeader(const ContributionBlocks& blocks,
                                      const StatisticsSelection& selection,
                                      const std::vector<TailBand>& bands, size_t l) {
  v1::Contributions c;
  const size_t es_levels = selection.es_contributions.size();
  const bool es = l < es_levels;
  c.set_measure(es ? v1::Contributions::MEASURE_ES : v1::Contributions::MEASURE_VAR);
  c.set_level(es ? selection.es_contributions[l] : selection.var_contributions[l - es_levels]);
  c.set_rows(blocks.contribution_rows);
  c.set_band_paths(bands[l].size());
  c.set_issuers(blocks.sensitivity_rows);
  return c;
}

// The arrays of level `l` of `blocks`, in field order: body(field number,
// its accessor, the floats).
template <typename Body>
void ForEachContributionArray(const ContributionBlocks& blocks, size_t l, Body body) {
  using C = v1::Contributions;
  for (auto [field, mutable_field, levels] :
       {std::tuple{C::kValuesFieldNumber, &C::mutable_values, &blocks.contributions},
        std::tuple{C::kStandardErrorsFieldNumber, &C::mutable_standard_errors,
                   &blocks.contributions_se},
        std::tuple{C::kDeltaFieldNumber, &C::mutable_delta, &blocks.delta},
        std::tuple{C::kDeltaStandardErrorsFieldNumber, &C::mutable_delta_standard_errors,
                   &blocks.delta_se},
        std::tuple{C::kVegaFieldNumber, &C::mutable_vega, &blocks.vega},
        std::tuple{C::kVegaStandardErrorsFieldNumber, &C::mutable_vega_standard_errors,
                   &blocks.vega_se}}) {
    if (l < levels->size()) body(field, mutable_field, (*levels)[l]);
  }
}

// A message's bytes as gRPC will send them: serialized fields, gathered into
// one slice while they follow each other, and arrays of floats, each a slice
// over the floats where they lie (holding their owner until gRPC is done).
class Pieces {
 public:
  void Append(std::string bytes) {
    size_ += bytes.size();
    if (!parts_.empty() && std::holds_alternative<std::string>(parts_.back())) {
      std::get<std::string>(parts_.back()) += bytes;
    } else {
      parts_.emplace_back(std::move(bytes));
    }
  }
  // Field `field` (bytes) of `floats`; nothing when they are empty (proto3
  // leaves an empty field out).
  void AppendFloats(int field, const SharedFloats& floats) {
    if (floats.empty()) return;
    Append(Header(field, floats.size() * sizeof(float)));
    size_ += floats.size() * sizeof(float);
    parts_.emplace_back(floats);
  }
  // Field `field`, the message `inner`.
  void AppendMessage(int field, Pieces inner) {
    Append(Header(field, inner.size_));
    for (auto& part : inner.parts_) {
      if (auto* bytes = std::get_if<std::string>(&part)) {
        Append(std::move(*bytes));
      } else {
        size_ += std::get<SharedFloats>(part).size() * sizeof(float);
        parts_.push_back(std::move(part));
      }
    }
  }

  grpc::ByteBuffer Buffer() && {
    std::vector<grpc::Slice> slices;
    for (auto& part : parts_) {
      if (auto* bytes = std::get_if<std::string>(&part)) {
        slices.push_back(StringSlice(std::move(*bytes)));
        continue;
      }
      const SharedFloats& floats = std::get<SharedFloats>(part);
      auto owner = std::make_unique<std::shared_ptr<const void>>(floats.owner());
      slices.push_back(OwningSlice(std::move(owner), const_cast<float*>(floats.data()),
                                   floats.size() * sizeof(float)));
    }
    return grpc::ByteBuffer(slices.data(), slices.size());
  }

 private:
  // The tag and length of a length-delimited field of `length` bytes.
  static std::string Header(int field, size_t length) {
    uint8_t bytes[16];
    uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(
        WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED), bytes);
    end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(length, end);
    return std::string(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes));
  }

  std::vector<std::variant<std::string, SharedFloats>> parts_;
  size_t size_ = 0;
};

// A chunk's contributions into `out`, their arrays copied.
void ToContributions(const ResultChunk& chunk, const StatisticsSelection& selection,
                     v1::ResultChunk* out) {
  const ContributionBlocks& blocks = chunk.contributions;
  const std::vector<TailBand> bands = ContributionBands(selection, chunk.rows);
  for (size_t l = 0; l < blocks.contributions.size(); ++l) {
    v1::Contributions* c = out->add_contributions();
    *c = ContributionsHeader(blocks, selection, bands, l);
    ForEachContributionArray(blocks, l, [&](int, auto mutable_field, const SharedFloats& floats) {
      (c->*mutable_field)()->assign(reinterpret_cast<const char*>(floats.data()),
                                    floats.size() * sizeof(float));
    });
  }
}

}  // namespace

void ToReply(const ResultChunk& chunk, const StatisticsSelection& selection, v1::PriceReply* reply,
             bool values) {
  reply->Clear();
  const auto* bytes = reinterpret_cast<const char*>(chunk.values.data());
  const size_t size = values ? chunk.values.size() * sizeof(float) : 0;
  if (chunk.kind == ResultChunk::Kind::kRoundStarted) {
    v1::RoundStarted* round = reply->mutable_round();
    round->set_round(static_cast<int32_t>(chunk.round));
    round->set_paths(chunk.rows);
    round->set_columns(chunk.round_columns);
    round->set_column_begin(chunk.begin);
    round->set_column_end(chunk.end);
    return;
  }
  if (chunk.kind == ResultChunk::Kind::kTerminalPrices) {
    ToPathColumns(chunk, bytes, size, reply->mutable_prices());
    return;
  }
  if (chunk.kind == ResultChunk::Kind::kInstrumentValues) {
    ToPathColumns(chunk, bytes, size, reply->mutable_values());
    return;
  }
  v1::ResultChunk* out = reply->mutable_chunk();
  out->set_column_begin(chunk.begin);
  out->set_column_end(chunk.end);
  out->set_rows(chunk.rows);
  if (size > 0) out->set_values(bytes, size);
  const ColumnStatistics& s = chunk.statistics;
  if (s.columns() > 0) {
    v1::ColumnStatistics* stats = out->mutable_statistics();
    stats->mutable_v0()->Assign(s.v0.begin(), s.v0.end());
    stats->mutable_mean()->Assign(s.mean.begin(), s.mean.end());
    stats->mutable_stddev()->Assign(s.stddev.begin(), s.stddev.end());
    stats->mutable_min()->Assign(s.min.begin(), s.min.end());
    stats->mutable_max()->Assign(s.max.begin(), s.max.end());
    stats->mutable_mean_standard_error()->Assign(s.mean_se.begin(), s.mean_se.end());
    stats->mutable_stddev_standard_error()->Assign(s.stddev_se.begin(), s.stddev_se.end());
    stats->mutable_target_met()->Assign(s.target_met.begin(), s.target_met.end());
    using Levels = std::vector<std::vector<double>>;
    static const Levels kNone;
    for (auto [levels, values, lower, upper, standard_error, to] :
         {std::tuple{&selection.quantiles, &s.quantiles, &s.quantiles_lo, &s.quantiles_hi, &kNone,
                     stats->mutable_quantiles()},
          std::tuple{&selection.var, &s.var, &s.var_lo, &s.var_hi, &kNone, stats->mutable_var()},
          std::tuple{&selection.es, &s.es, &kNone, &kNone, &s.es_se, stats->mutable_es()}}) {
      for (size_t l = 0; l < levels->size(); ++l) {
        v1::LevelValues* level = to->Add();
        level->set_level((*levels)[l]);
        level->mutable_values()->Assign((*values)[l].begin(), (*values)[l].end());
        // The errors, when they were asked for (else these are empty).
        for (auto [from, field] :
             {std::pair{lower, level->mutable_lower()}, std::pair{upper, level->mutable_upper()},
              std::pair{standard_error, level->mutable_standard_error()}}) {
          if (l < from->size()) field->Assign((*from)[l].begin(), (*from)[l].end());
        }
      }
    }
  }
  if (values) ToContributions(chunk, selection, out);  // else EncodeReply appends them
}

grpc::ByteBuffer EncodeReply(const ResultChunk& chunk, const StatisticsSelection& selection,
                             int32_t shared_slot) {
  v1::PriceReply reply;
  ToReply(chunk, selection, &reply, false);
  if (shared_slot > 0 && reply.has_chunk()) reply.mutable_chunk()->set_shared_slot(shared_slot);
  const ContributionBlocks& blocks = chunk.contributions;
  if (chunk.values.empty() && blocks.empty()) return EncodeReply(reply);
  // The message that holds the arrays, and its field in PriceReply.
  Pieces inner;
  int field = v1::PriceReply::kChunkFieldNumber;
  int values_field = v1::ResultChunk::kValuesFieldNumber;
  if (chunk.kind == ResultChunk::Kind::kTerminalPrices) {
    inner.Append(reply.prices().SerializeAsString());
    field = v1::PriceReply::kPricesFieldNumber;
    values_field = v1::TerminalPricesChunk::kValuesFieldNumber;
  } else if (chunk.kind == ResultChunk::Kind::kInstrumentValues) {
    inner.Append(reply.values().SerializeAsString());
    field = v1::PriceReply::kValuesFieldNumber;
    values_field = v1::InstrumentValuesChunk::kValuesFieldNumber;
  } else {
    inner.Append(reply.chunk().SerializeAsString());
    const std::vector<TailBand> bands = ContributionBands(selection, chunk.rows);
    for (size_t l = 0; l < blocks.contributions.size(); ++l) {
      Pieces c;
      c.Append(ContributionsHeader(blocks, selection, bands, l).SerializeAsString());
      ForEachContributionArray(blocks, l, [&](int array, auto, const SharedFloats& floats) {
        c.AppendFloats(array, floats);
      });
      inner.AppendMessage(v1::ResultChunk::kContributionsFieldNumber, std::move(c));
    }
  }
  inner.AppendFloats(values_field, chunk.values);
  Pieces out;
  out.AppendMessage(field, std::move(inner));
  return std::move(out).Buffer();
}

grpc::ByteBuffer EncodeReply(const v1::PriceReply& reply) {
  grpc::Slice slice = StringSlice(reply.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

void ToAcceptedReply(const Job& job, v1::PriceReply* reply) {
  const ShardPlan& plan = job.plan();
  v1::JobAccepted* accepted = reply->mutable_accepted();
  accepted->set_job_id(job.id());
  accepted->mutable_plan()->set_shard_columns(plan.shard_columns);
  accepted->mutable_plan()->set_shard_count(plan.shard_count);
  accepted->mutable_plan()->set_chunk_columns(plan.chunk_columns);
  for (const DevicePlan& d : job.device_plans()) {
    if (d.shards_in_flight > 0) accepted->mutable_plan()->add_devices(d.device);
    v1::DevicePlan* out = accepted->mutable_plan()->add_device_plans();
    out->set_device(d.device);
    out->set_shards_in_flight(d.shards_in_flight);
    out->set_resident_bytes(d.resident_bytes);
    out->set_shard_bytes(d.shard_bytes);
  }
  accepted->set_issuers(job.spec().market.issuers());
  accepted->set_instruments(static_cast<int64_t>(job.spec().instruments.size()));
  accepted->set_paths(job.spec().paths);
  accepted->set_column_begin(job.spec().column_begin);
  accepted->set_column_end(job.spec().column_end);
}

void ToFinishedReply(const JobSummary& summary, v1::PriceReply* reply) {
  v1::JobFinished* finished = reply->mutable_finished();
  finished->set_elapsed_seconds(summary.elapsed_seconds);
  finished->set_flops(summary.flops);
  finished->set_bytes(summary.bytes);
  finished->set_gemm_seconds(summary.gemm_seconds);
  finished->set_statistics_seconds(summary.statistics_seconds);
}

void ToScenarioSetReply(const StoredSet& stored, v1::ScenarioSet* reply) {
  reply->set_id(stored.id);
  reply->set_rows(stored.rows);
  reply->set_columns(stored.columns);
  reply->set_bytes(stored.bytes);
  reply->set_existed(stored.existed);
}

void ToListDevicesReply(const std::vector<DeviceStatus>& devices, const EngineStatus& engine,
                        int64_t max_queued_jobs, v1::ListDevicesReply* reply) {
  for (const DeviceStatus& status : devices) {
    v1::DeviceInfo* info = reply->add_devices();
    info->set_name(status.name);
    info->set_kind(status.kind);
    info->set_kernels(status.kernels);
    info->set_memory_budget_bytes(status.memory_budget_bytes);
    info->set_bytes_in_use(status.bytes_in_use);
    info->set_peak_bytes(status.peak_bytes);
    info->set_headroom_bytes(status.headroom_bytes);
    info->set_idle_block_bytes(status.idle_block_bytes);
    info->set_shards_done(status.shards_done);
    info->set_busy_seconds(status.busy_seconds);
    info->set_lost(status.lost);
  }
  reply->set_queued_jobs(engine.queued_jobs);
  reply->set_max_queued_jobs(max_queued_jobs);
  reply->set_pending_bytes(engine.pending_bytes);
  reply->set_max_pending_bytes(engine.max_pending_bytes);
  reply->set_pinned_memory_bytes(engine.pinned_budget_bytes);
  reply->set_pinned_bytes_in_use(engine.pinned_bytes_in_use);
  reply->set_pinned_peak_bytes(engine.pinned_peak_bytes);
}

}  // namespace pricer
