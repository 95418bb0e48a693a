// The chunks of one UploadScenarios call assembled into one N x M float32
// matrix. Memory is taken as bytes arrive, never the declared size up front
// and zero-filled: a client that declares 2 GiB and sends nothing holds
// almost nothing. The declared size is reserved from the server's budget for
// uploads in progress (a MemoryAccount of --max-upload-bytes-in-flight) at
// the first chunk, and given back when the assembler goes.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "pricer/v1/pricer.pb.h"
#include "server/scheduler/memory_account.h"

namespace pricer {

class UploadAssembler {
 public:
  // A set may have at most `max_set_bytes` (the store's bound); `budget`
  // outlives the assembler.
  UploadAssembler(int64_t max_set_bytes, MemoryAccount& budget)
      : max_set_bytes_(max_set_bytes), budget_(budget) {}
  ~UploadAssembler() { budget_.Release(reserved_); }
  UploadAssembler(const UploadAssembler&) = delete;
  UploadAssembler& operator=(const UploadAssembler&) = delete;

  // Appends one chunk, or says why the upload is refused (the first chunk's
  // shape, a shape that changes, more bytes than the shape holds, the
  // budget).
  absl::Status Add(const v1::ScenarioChunk& chunk);
  // After the last chunk: INVALID_ARGUMENT when none came or the matrix is
  // incomplete.
  absl::Status Complete() const;

  int64_t rows() const { return rows_; }
  int64_t columns() const { return columns_; }
  int64_t received() const { return received_; }
  // The matrix (column-major), once Complete() is OK.
  std::vector<float> TakeValues() { return std::move(values_); }
  // Frees what arrived and gives the reservation back now, not when the
  // assembler goes: the upload reactor drops it before it finishes the call,
  // so a client that sends the upload again once told it ended finds the
  // budget as it was. rows(), columns() and received() stay.
  void Drop();

 private:
  absl::Status Start(const v1::ScenarioChunk& chunk);

  const int64_t max_set_bytes_;
  MemoryAccount& budget_;
  int64_t reserved_ = 0;  // of budget_
  int64_t rows_ = 0;
  int64_t columns_ = 0;
  int64_t expected_ = 0;       // bytes of the declared matrix
  std::vector<float> values_;  // the bytes that arrived, rounded up to floats
  int64_t received_ = 0;       // bytes that arrived
};

}  // namespace pricer
