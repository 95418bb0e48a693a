#include "server/model/correlation.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
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

namespace {

// The columns one step of the blocked factorisation takes: 256 columns of a
// 4096 x 4096 matrix are at most 1/16 of its flops, about 0.1 s on 2 cores.
constexpr int64_t kCholeskyBlock = 256;

absl::Status NotPositiveDefinite(int64_t row) {
  return absl::InvalidArgumentError(absl::StrCat(
      "market.correlation is not positive definite: the Cholesky factorisation fails at "
      "row ",
      row,
      " (a correlation of exactly 1 or -1 between issuers is not allowed; use "
      "e.g. 0.999)"));
}

}  // namespace

absl::StatusOr<std::vector<float>> CholeskyFactor(const std::vector<double>& correlation,
                                                  int64_t n, const StopPoll& stop) {
  RETURN_IF_ERROR(CheckCorrelation(correlation, n));
  // Right-looking blocked Cholesky on the lower triangle, column-major (the
  // same numbers as the row-major upper triangle of a symmetric matrix): per
  // block of columns, dpotrf of its diagonal block, dtrsm of the panel below
  // it, dsyrk of the trailing matrix; `stop` is polled between blocks.
  std::vector<double> factor(correlation);
  const auto ld = static_cast<lapack_int>(n);
  const auto at = [&](int64_t i, int64_t j) { return factor.data() + j * n + i; };
  for (int64_t k = 0; k < n; k += kCholeskyBlock) {
    if (stop) RETURN_IF_ERROR(stop());
    const int64_t width = std::min(kCholeskyBlock, n - k), below = n - k - width;
    const lapack_int info =
        LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', static_cast<lapack_int>(width), at(k, k), ld);
    if (info > 0) return NotPositiveDefinite(k + info - 1);
    if (info < 0) {
      return absl::InternalError(absl::StrCat("LAPACKE_dpotrf: argument ", -info, " is invalid"));
    }
    if (below == 0) break;
    const auto rows = static_cast<blasint>(below), cols = static_cast<blasint>(width);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, rows, cols, 1.0,
                at(k, k), ld, at(k + width, k), ld);
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, rows, cols, -1.0, at(k + width, k), ld,
                1.0, at(k + width, k + width), ld);
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
