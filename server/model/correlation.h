// Correlated issuers: the correlation matrix C of the shocks is checked and
// factorised once per job, C = L L^T, and the shocks of each path become
// x = L z.
#pragma once

#include <cstdint>
#include <functional>
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
// definiteness. Factorised in float64, blocked (LAPACK dpotrf per diagonal
// block, BLAS dtrsm and dsyrk for the rest); `stop`, when given, is polled
// before each block of 256 columns, and its error ends the factorisation (a
// cancelled job's 4096 x 4096 factor stops within about 0.1 s).
using StopPoll = std::function<absl::Status()>;
absl::StatusOr<std::vector<float>> CholeskyFactor(const std::vector<double>& correlation,
                                                  int64_t n, const StopPoll& stop = nullptr);

}  // namespace pricer
