// The checks request validation is made of: each names the field and its
// value in an INVALID_ARGUMENT.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace pricer {

// Prints a double as StrCat does, but NaN as "NaN".
template <typename T>
std::string Show(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) return "NaN";
  }
  return absl::StrCat(value);
}

// The payload of an INVALID_ARGUMENT that names the request field it is
// about (e.g. "market.explicit.volatility[1]"); the service sends it to the
// caller as the trailing metadata `pricer-field` (status_mapping.h).
inline constexpr absl::string_view kFieldPayload = "pricer.v1/field";

// "`field` is `value`: `rule`", naming the field in the payload too. A field
// such as "scenarios.matrix.values size" names scenarios.matrix.values.
inline absl::Status Invalid(absl::string_view field, auto value, absl::string_view rule) {
  absl::Status status =
      absl::InvalidArgumentError(absl::StrCat(field, " is ", Show(value), ": ", rule));
  status.SetPayload(kFieldPayload, absl::Cord(field.substr(0, field.find(' '))));
  return status;
}

inline absl::Status CheckFinite(absl::string_view field, double value) {
  if (std::isfinite(value)) return absl::OkStatus();
  return Invalid(field, value, "must be finite");
}

inline absl::Status CheckRange(absl::string_view field, int64_t value, int64_t low, int64_t high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return Invalid(field, value, absl::StrCat("must be in [", low, ", ", high, "]"));
}

}  // namespace pricer
