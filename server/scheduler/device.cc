#include "server/scheduler/device.h"

#include "absl/strings/cord.h"

namespace pricer {
namespace {

constexpr absl::string_view kDeviceLostPayload = "type.pricer/device_lost";

}  // namespace

absl::Status DeviceLost(absl::Status cause) {
  if (!cause.ok()) cause.SetPayload(kDeviceLostPayload, absl::Cord("1"));
  return cause;
}

bool IsDeviceLost(const absl::Status& status) {
  return status.GetPayload(kDeviceLostPayload).has_value();
}

}  // namespace pricer
