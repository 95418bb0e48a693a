#include "server/service/upload_assembler.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/service/request_validation.h"

namespace pricer {

absl::Status UploadAssembler::Start(const v1::ScenarioChunk& chunk) {
  if (chunk.rows() < 1 || chunk.rows() > kMaxIssuers) {
    return absl::InvalidArgumentError(absl::StrCat("the first chunk's rows is ", chunk.rows(),
                                                   ": must be in [1, ", kMaxIssuers, "]"));
  }
  if (chunk.columns() < 1 || chunk.columns() > kMaxScenarioColumns) {
    return absl::InvalidArgumentError(absl::StrCat("the first chunk's columns is ", chunk.columns(),
                                                   ": must be in [1, ", kMaxScenarioColumns, "]"));
  }
  rows_ = chunk.rows();
  columns_ = chunk.columns();
  expected_ = rows_ * columns_ * static_cast<int64_t>(sizeof(float));
  if (expected_ > max_set_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat("the set has ", expected_,
                                                     " bytes, over the server's "
                                                     "--scenario-store-bytes of ",
                                                     max_set_bytes_));
  }
  RETURN_IF_ERROR(budget_.Reserve(
      expected_, "the upload (uploads in progress are bounded by --max-upload-bytes-in-flight)"));
  reserved_ = expected_;
  // Address space for the whole matrix, untouched: pages become memory only
  // as the bytes arrive and are written.
  values_.reserve(static_cast<size_t>(rows_ * columns_));
  return absl::OkStatus();
}

void UploadAssembler::Drop() {
  std::vector<float>().swap(values_);
  budget_.Release(reserved_);
  reserved_ = 0;
}

absl::Status UploadAssembler::Add(const v1::ScenarioChunk& chunk) {
  if (rows_ == 0) {
    RETURN_IF_ERROR(Start(chunk));
  } else if ((chunk.rows() != 0 && chunk.rows() != rows_) ||
             (chunk.columns() != 0 && chunk.columns() != columns_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("inconsistent upload: a chunk says ", chunk.rows(), " x ", chunk.columns(),
                     " after the first said ", rows_, " x ", columns_));
  }
  const int64_t bytes = static_cast<int64_t>(chunk.values().size());
  if (received_ + bytes > expected_) {
    return absl::InvalidArgumentError(absl::StrCat("inconsistent upload: more than the ", expected_,
                                                   " bytes of a ", rows_, " x ", columns_,
                                                   " float32 matrix"));
  }
  // Grows into the reserved capacity: only the floats these bytes reach.
  values_.resize(static_cast<size_t>((received_ + bytes + 3) / 4));
  std::memcpy(reinterpret_cast<char*>(values_.data()) + received_, chunk.values().data(),
              static_cast<size_t>(bytes));
  received_ += bytes;
  return absl::OkStatus();
}

absl::Status UploadAssembler::Complete() const {
  if (rows_ == 0) return absl::InvalidArgumentError("empty upload: no chunk arrived");
  if (received_ != expected_) {
    return absl::InvalidArgumentError(
        absl::StrCat("truncated upload: ", received_, " of the ", expected_, " bytes of a ", rows_,
                     " x ", columns_, " float32 matrix arrived; nothing was stored"));
  }
  return absl::OkStatus();
}

}  // namespace pricer
