// The checks request validation is made of: each names the field and its
// value in an INVALID_ARGUMENT.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
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

inline absl::Status Invalid(absl::string_view field, auto value, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, " is ", Show(value), ": ", rule));
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
