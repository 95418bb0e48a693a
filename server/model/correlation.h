// Correlated issuers: the correlation matrix C of the shocks is checked and
// factorised once per job, C = L L^T, and the shocks of each path become
// x = L z.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace pricer {

// INVALID_ARGUMENT naming the entry of `correlation` (n x n, row-major) that
// breaks a rule: symmetry, the unit diagonal, entries in [-1, 1]. Positive
// definiteness needs the factorisation (CholeskyFactor).
absl::Status CheckCorrelation(const std::vector<double>& correlation, int64_t n);

// Checks `correlation` (n x n, row-major) and returns its Cholesky factor L
// (n x n, column-major, lower triangle, zeros above) in float32, the
// precision the shocks are computed in. INVALID_ARGUMENT names the check that
// failed and where: symmetry, the unit diagonal, entries in [-1, 1], positive
// definiteness. Factorised in float64 with LAPACK (dpotrf).
absl::StatusOr<std::vector<float>> CholeskyFactor(const std::vector<double>& correlation,
                                                  int64_t n);

}  // namespace pricer
