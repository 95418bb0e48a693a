// The CUDA runtime's current device is per thread: a ScopedDevice makes one
// GPU current for a scope and gives the thread its previous device back at
// the end, so a call into one device leaves nothing behind for the next.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pricer {

// Makes GPU `ordinal` current for the scope; `device` names it in errors.
//
//   ScopedDevice current(ordinal_, name());
//   RETURN_IF_ERROR(current.status());
//
// Objects that hold memory or handles on the GPU should be destroyed inside
// the scope: declare them after it.
class ScopedDevice {
 public:
  ScopedDevice(int ordinal, absl::string_view device);
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  ~ScopedDevice();

  // Whether `ordinal` is current: cudaSetDevice's result (CudaStatus).
  const absl::Status& status() const { return status_; }

 private:
  int previous_ = -1;  // restored at the end when >= 0
  absl::Status status_;
};

}  // namespace pricer
