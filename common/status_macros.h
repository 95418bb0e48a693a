// The one error idiom of the project's C++ (server and client): a failed
// absl::Status or absl::StatusOr goes back to the caller unchanged.
//
//   RETURN_IF_ERROR(CheckRange("paths", paths, 1, kMaxPaths));
//   ASSIGN_OR_RETURN(Market market, ToMarket(request));
//
// Both work in functions that return absl::Status or any absl::StatusOr<T>.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PRICER_STATUS_CONCAT_INNER(a, b) a##b
#define PRICER_STATUS_CONCAT(a, b) PRICER_STATUS_CONCAT_INNER(a, b)

// Evaluates `expr` (an absl::Status) once and returns it when it is not OK.
#define RETURN_IF_ERROR(expr)                                           \
  do {                                                                  \
    if (::absl::Status pricer_status_ = (expr); !pricer_status_.ok()) { \
      return pricer_status_;                                            \
    }                                                                   \
  } while (false)

// Evaluates `expr` (an absl::StatusOr<T>) once: returns its status when it is
// not OK, else moves its value into `lhs` (a declaration or an lvalue).
#define ASSIGN_OR_RETURN(lhs, expr) \
  PRICER_ASSIGN_OR_RETURN_IMPL(PRICER_STATUS_CONCAT(pricer_statusor_, __LINE__), lhs, expr)
#define PRICER_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr)  \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = *std::move(statusor)
