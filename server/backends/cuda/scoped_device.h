// The CUDA runtime's current device is per thread: a ScopedDevice makes one
// GPU current for a scope and, at the end, makes current again the device an
// enclosing ScopedDevice had made current on the thread, if any (never the
// runtime's default device 0 of a fresh thread, which would create a
// context there).
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
  const int ordinal_;
  const int previous_;  // the enclosing scope's device, restored at the end; -1 for none
  absl::Status status_;
};

}  // namespace pricer
