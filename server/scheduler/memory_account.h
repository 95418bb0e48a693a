// The bytes the engine holds on one device, against that device's budget.
#pragma once

#include <algorithm>
#include <cstdint>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/scheduler/allocation_table.h"

namespace pricer {

class MemoryAccount {
 public:
  explicit MemoryAccount(int64_t budget_bytes) : budget_(budget_bytes) {}

  // Counts `bytes` against the budget, or RESOURCE_EXHAUSTED naming `what`
  // when they do not fit.
  absl::Status Reserve(int64_t bytes, absl::string_view what);
  void Release(int64_t bytes);

  int64_t budget() const { return budget_; }
  int64_t in_use() const;
  int64_t peak() const;

 private:
  const int64_t budget_;
  mutable absl::Mutex mu_;
  int64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
};

// Where an AccountedArray's memory comes from: the host heap. A backend
// with memory of its own brings another policy with the same two functions
// (server/backends/cuda/cuda_array.h: CudaDeviceMemory).
struct HostMemory {
  absl::Status Allocate(int64_t bytes, absl::string_view /*what*/, void** out) const {
    *out = ::operator new[](static_cast<size_t>(bytes));
    return absl::OkStatus();
  }
  static void Free(void* data) { ::operator delete[](data); }
};

// An array whose bytes are counted in a MemoryAccount while it lives. T is a
// plain number type (the memory is not constructed).
template <typename T, typename Memory = HostMemory>
class AccountedArray {
  // The memory is neither constructed nor destroyed: its bytes are written
  // (by kernels, copies or stores) before they are read.
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  AccountedArray() = default;
  AccountedArray(const AccountedArray&) = delete;
  AccountedArray& operator=(const AccountedArray&) = delete;
  AccountedArray(AccountedArray&& other) noexcept { *this = std::move(other); }
  AccountedArray& operator=(AccountedArray&& other) noexcept {
    Reset();
    account_ = std::exchange(other.account_, nullptr);
    size_ = std::exchange(other.size_, 0);
    data_ = std::exchange(other.data_, nullptr);
    return *this;
  }
  ~AccountedArray() { Reset(); }

  // Allocates `buffer`, an entry of the job's AllocationTable, counted
  // against `account` (see below).
  static absl::Status Allocate(MemoryAccount& account, const Buffer& buffer, AccountedArray* out,
                               const Memory& memory = {}) {
    if (buffer.element_bytes != static_cast<int64_t>(sizeof(T))) {
      return absl::InternalError(absl::StrCat("buffer ", buffer.name, " has elements of ",
                                              buffer.element_bytes, " bytes, not ", sizeof(T)));
    }
    return Allocate(account, buffer.elements, buffer.name, out, memory);
  }

  // Allocates `size` elements (uninitialised) counted against `account`:
  // RESOURCE_EXHAUSTED naming `what` when they do not fit, before `memory`
  // is asked; then whatever `memory` says.
  static absl::Status Allocate(MemoryAccount& account, int64_t size, absl::string_view what,
                               AccountedArray* out, const Memory& memory = {}) {
    const int64_t bytes = std::max<int64_t>(size, 1) * static_cast<int64_t>(sizeof(T));
    out->Reset();  // the old array's bytes first, so a replacement that fits is not refused
    RETURN_IF_ERROR(account.Reserve(bytes, what));
    void* data = nullptr;
    if (absl::Status s = memory.Allocate(bytes, what, &data); !s.ok()) {
      account.Release(bytes);
      return s;
    }
    out->account_ = &account;
    out->size_ = size;
    out->data_ = static_cast<T*>(data);
    return absl::OkStatus();
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  void Reset() {
    if (data_ == nullptr) return;
    Memory::Free(data_);
    account_->Release(std::max<int64_t>(size_, 1) * static_cast<int64_t>(sizeof(T)));
    account_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }

  MemoryAccount* account_ = nullptr;
  int64_t size_ = 0;
  T* data_ = nullptr;
};

// Bytes counted in a MemoryAccount for memory that a library allocates
// itself, of a size measured beforehand (a cuBLAS handle's own state): an
// entry of the job's AllocationTable, reserved while the Reservation lives.
class Reservation {
 public:
  Reservation() = default;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  Reservation(Reservation&& other) noexcept { *this = std::move(other); }
  Reservation& operator=(Reservation&& other) noexcept {
    Reset();
    account_ = std::exchange(other.account_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    return *this;
  }
  ~Reservation() { Reset(); }

  // RESOURCE_EXHAUSTED naming the buffer when its bytes do not fit.
  static absl::Status Reserve(MemoryAccount& account, const Buffer& buffer, Reservation* out) {
    out->Reset();
    RETURN_IF_ERROR(account.Reserve(buffer.bytes(), buffer.name));
    out->account_ = &account;
    out->bytes_ = buffer.bytes();
    return absl::OkStatus();
  }

 private:
  void Reset() {
    if (account_ != nullptr) account_->Release(bytes_);
    account_ = nullptr;
    bytes_ = 0;
  }

  MemoryAccount* account_ = nullptr;
  int64_t bytes_ = 0;
};

}  // namespace pricer
