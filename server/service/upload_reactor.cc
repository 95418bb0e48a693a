#include "server/service/upload_reactor.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/service/reply_encoding.h"
#include "server/service/request_validation.h"
#include "server/service/status_mapping.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

// One UploadScenarios call: reads the chunks into one matrix, checking each
// against the shape of the first, then stores it on the service's upload
// executor (the check, SHA-256 and disk write of a large set must not hold a
// gRPC thread).
class UploadReactor final : public grpc::ServerReadReactor<v1::ScenarioChunk> {
 public:
  UploadReactor(PricerService& service, const grpc::CallbackServerContext& context,
                v1::ScenarioSet* reply)
      : service_(service), store_(service.store()), reply_(reply) {
    call_.method = "UploadScenarios";
    absl::StatusOr<ClientIdentity> client = service.BeginCall(context, true, &call_);
    if (!client.ok()) {
      FinishWith(client.status());
      return;
    }
    active_ = true;
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Complete();
      return;
    }
    if (absl::Status refused = Take(); !refused.ok()) {
      spdlog::info("refused an upload from {}: {}", call_.peer, std::string(refused.message()));
      FinishWith(refused);
      return;
    }
    StartRead(&chunk_);
  }

  void OnDone() override {
    call_.columns = columns_;
    call_.bytes_received = received_;
    service_.EndCall(std::move(call_), active_);
    delete this;
  }

 private:
  // Appends one chunk, or says why the upload is refused.
  absl::Status Take() {
    if (rows_ == 0) {
      if (chunk_.rows() < 1 || chunk_.rows() > kMaxIssuers) {
        return absl::InvalidArgumentError(absl::StrCat("the first chunk's rows is ", chunk_.rows(),
                                                       ": must be in [1, ", kMaxIssuers, "]"));
      }
      if (chunk_.columns() < 1 || chunk_.columns() > kMaxScenarioColumns) {
        return absl::InvalidArgumentError(absl::StrCat("the first chunk's columns is ",
                                                       chunk_.columns(), ": must be in [1, ",
                                                       kMaxScenarioColumns, "]"));
      }
      rows_ = chunk_.rows();
      columns_ = chunk_.columns();
      expected_ = rows_ * columns_ * static_cast<int64_t>(sizeof(float));
      if (expected_ > store_.max_bytes()) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the set has ", expected_, " bytes, over the server's --scenario-store-bytes of ",
            store_.max_bytes()));
      }
      values_.resize(static_cast<size_t>(rows_ * columns_));
    } else if ((chunk_.rows() != 0 && chunk_.rows() != rows_) ||
               (chunk_.columns() != 0 && chunk_.columns() != columns_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("inconsistent upload: a chunk says ", chunk_.rows(), " x ", chunk_.columns(),
                       " after the first said ", rows_, " x ", columns_));
    }
    if (received_ + static_cast<int64_t>(chunk_.values().size()) > expected_) {
      return absl::InvalidArgumentError(absl::StrCat("inconsistent upload: more than the ",
                                                     expected_, " bytes of a ", rows_, " x ",
                                                     columns_, " float32 matrix"));
    }
    std::memcpy(reinterpret_cast<char*>(values_.data()) + received_, chunk_.values().data(),
                chunk_.values().size());
    received_ += static_cast<int64_t>(chunk_.values().size());
    return absl::OkStatus();
  }

  void FinishWith(const absl::Status& status) {
    call_.code = ToGrpcCode(status.code());
    Finish(ToGrpcStatus(status));
  }

  void Complete() {
    if (rows_ == 0) {
      FinishWith(absl::InvalidArgumentError("empty upload: no chunk arrived"));
      return;
    }
    if (received_ != expected_) {
      FinishWith(absl::InvalidArgumentError(
          absl::StrCat("truncated upload: ", received_, " of the ", expected_, " bytes of a ",
                       rows_, " x ", columns_, " float32 matrix arrived; nothing was stored")));
      return;
    }
    // Store's Finish is the executor's last touch of the reactor, which
    // OnDone deletes.
    if (!service_.uploads().TrySubmit([this] { FinishWith(Store()); })) {
      FinishWith(absl::ResourceExhaustedError(
          "too many uploads are being stored on this server at once; retry shortly"));
    }
  }

  absl::Status Store() {
    RETURN_IF_ERROR(CheckPositions("values", values_, rows_));
    ASSIGN_OR_RETURN(const StoredSet stored, store_.Put(rows_, columns_, std::move(values_)));
    ToScenarioSetReply(stored, reply_);
    spdlog::info("scenario set {}: {} x {}{}", stored.id, stored.rows, stored.columns,
                 stored.existed ? " (already stored)" : "");
    return absl::OkStatus();
  }

  PricerService& service_;
  ScenarioStore& store_;
  v1::ScenarioSet* reply_;
  v1::ScenarioChunk chunk_;
  int64_t rows_ = 0;
  int64_t columns_ = 0;
  int64_t expected_ = 0;
  std::vector<float> values_;  // the matrix as it arrives
  int64_t received_ = 0;       // bytes of it so far
  bool active_ = false;        // counted among the active calls
  CallRecord call_;
};

}  // namespace

grpc::ServerReadReactor<v1::ScenarioChunk>* NewUploadReactor(
    PricerService& service, const grpc::CallbackServerContext& context, v1::ScenarioSet* reply) {
  return new UploadReactor(service, context, reply);
}

}  // namespace pricer
