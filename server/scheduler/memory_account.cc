#include "server/scheduler/memory_account.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace pricer {

absl::Status MemoryAccount::Reserve(int64_t bytes, absl::string_view what) {
  absl::MutexLock lock(&mu_);
  if (in_use_ + bytes > budget_) {
    return absl::ResourceExhaustedError(absl::StrCat(what, " needs ", bytes, " bytes; ", in_use_,
                                                     " of the budget of ", budget_,
                                                     " bytes are in use"));
  }
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  return absl::OkStatus();
}

void MemoryAccount::Release(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  in_use_ -= bytes;
}

int64_t MemoryAccount::in_use() const {
  absl::MutexLock lock(&mu_);
  return in_use_;
}

int64_t MemoryAccount::peak() const {
  absl::MutexLock lock(&mu_);
  return peak_;
}

}  // namespace pricer
