#include "server/model/correlation.h"

#include <lapacke.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

// Entries that should be equal (C[i,j] and C[j,i]; the diagonal and 1) may
// differ by this much, for matrices written out in decimal.
constexpr double kTolerance = 1e-9;

absl::Status Bad(int64_t i, int64_t j, double value, absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("market.correlation[", i, ", ", j, "] is ", value, ": ", rule));
}

}  // namespace

absl::Status CheckCorrelation(const std::vector<double>& correlation, int64_t n) {
  auto at = [&](int64_t i, int64_t j) { return correlation[static_cast<size_t>(i * n + j)]; };
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double c = at(i, j);
      if (!std::isfinite(c) || c < -1 - kTolerance || c > 1 + kTolerance) {
        return Bad(i, j, c, "entries must be in [-1, 1]");
      }
      if (i == j && std::abs(c - 1) > kTolerance) return Bad(i, j, c, "the diagonal must be 1");
      if (j > i && std::abs(c - at(j, i)) > kTolerance) {
        return Bad(
            i, j, c,
            absl::StrCat("the matrix must be symmetric, but [", j, ", ", i, "] is ", at(j, i)));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> CholeskyFactor(const std::vector<double>& correlation,
                                                  int64_t n) {
  RETURN_IF_ERROR(CheckCorrelation(correlation, n));
  // dpotrf on the lower triangle, column-major: the same numbers as the
  // row-major upper triangle of a symmetric matrix.
  std::vector<double> factor(correlation);
  const lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', static_cast<lapack_int>(n),
                                         factor.data(), static_cast<lapack_int>(n));
  if (info > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "market.correlation is not positive definite: the Cholesky factorisation fails at "
        "row ",
        info - 1,
        " (a correlation of exactly 1 or -1 between issuers is not allowed; use "
        "e.g. 0.999)"));
  }
  if (info < 0) {
    return absl::InternalError(absl::StrCat("LAPACKE_dpotrf: argument ", -info, " is invalid"));
  }
  std::vector<float> lower(factor.size(), 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = j; i < n; ++i) {
      lower[static_cast<size_t>(j * n + i)] =
          static_cast<float>(factor[static_cast<size_t>(j * n + i)]);
    }
  }
  return lower;
}

}  // namespace pricer
