// The bytes the engine holds on one device, against that device's budget.
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

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
  mutable std::mutex mu_;
  int64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
};

// A host array whose bytes are counted in a MemoryAccount while it lives.
template <typename T>
class AccountedArray {
 public:
  AccountedArray() = default;
  AccountedArray(const AccountedArray&) = delete;
  AccountedArray& operator=(const AccountedArray&) = delete;
  AccountedArray(AccountedArray&& other) noexcept { *this = std::move(other); }
  AccountedArray& operator=(AccountedArray&& other) noexcept {
    Reset();
    account_ = other.account_;
    size_ = other.size_;
    data_ = other.data_;
    other.account_ = nullptr;
    other.data_ = nullptr;
    other.size_ = 0;
    return *this;
  }
  ~AccountedArray() { Reset(); }

  // Allocates `size` elements (uninitialised) counted against `account`.
  static absl::Status Allocate(MemoryAccount& account, int64_t size, absl::string_view what,
                               AccountedArray* out) {
    const int64_t bytes = size * static_cast<int64_t>(sizeof(T));
    out->Reset();  // the old array's bytes first, so a replacement that fits is not refused
    if (absl::Status s = account.Reserve(bytes, what); !s.ok()) return s;
    out->account_ = &account;
    out->size_ = size;
    out->data_ = new T[static_cast<size_t>(size)];
    return absl::OkStatus();
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  void Reset() {
    if (account_ != nullptr) account_->Release(size_ * static_cast<int64_t>(sizeof(T)));
    delete[] data_;
    account_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }

  MemoryAccount* account_ = nullptr;
  int64_t size_ = 0;
  T* data_ = nullptr;
};

}  // namespace pricer
