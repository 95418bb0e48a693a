#include "server/model/correlation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace pricer {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// L[i, j] of a column-major n x n factor.
float At(const std::vector<float>& lower, int64_t n, int64_t i, int64_t j) {
  return lower[static_cast<size_t>(j * n + i)];
}

// A random correlation matrix (row-major): the normalised Gram matrix of n
// random vectors in n + 2 dimensions, positive definite.
std::vector<double> RandomCorrelation(int64_t n, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal;
  const int64_t d = n + 2;
  std::vector<double> v(static_cast<size_t>(n * d));
  for (double& x : v) x = normal(generator);
  std::vector<double> c(static_cast<size_t>(n * n));
  auto dot = [&](int64_t a, int64_t b) {
    double s = 0;
    for (int64_t k = 0; k < d; ++k)
      s += v[static_cast<size_t>(a * d + k)] * v[static_cast<size_t>(b * d + k)];
    return s;
  };
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      c[static_cast<size_t>(i * n + j)] =
          i == j ? 1.0 : dot(i, j) / std::sqrt(dot(i, i) * dot(j, j));
    }
  }
  return c;
}

// L is lower triangular with a positive diagonal and L L^T = C to float32
// rounding (each entry of L rounded by 2^-24 relative, |L| <= 1 per row).
void ExpectFactorOf(const std::vector<double>& c, int64_t n) {
  absl::StatusOr<std::vector<float>> lower = CholeskyFactor(c, n);
  ASSERT_TRUE(lower.ok()) << lower.status();
  ASSERT_EQ(lower->size(), static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_GT(At(*lower, n, i, i), 0.0f) << "L[" << i << ", " << i << "]";
    for (int64_t j = i + 1; j < n; ++j) {
      EXPECT_EQ(At(*lower, n, i, j), 0.0f) << "L[" << i << ", " << j << "] above the diagonal";
    }
  }
  const double tolerance = 4.0 * static_cast<double>(n) * std::numeric_limits<float>::epsilon();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double product = 0;
      for (int64_t k = 0; k < n; ++k) {
        product += static_cast<double>(At(*lower, n, i, k)) * At(*lower, n, j, k);
      }
      EXPECT_NEAR(product, c[static_cast<size_t>(i * n + j)], tolerance)
          << "(L L^T)[" << i << ", " << j << "]";
    }
  }
}

std::vector<double> Identity(int64_t n) {
  std::vector<double> c(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) c[static_cast<size_t>(i * n + i)] = 1.0;
  return c;
}

// The status of factorising `c`, which must be refused as INVALID_ARGUMENT.
std::string Refusal(const std::vector<double>& c, int64_t n) {
  absl::StatusOr<std::vector<float>> lower = CholeskyFactor(c, n);
  EXPECT_FALSE(lower.ok());
  if (lower.ok()) return "";
  EXPECT_EQ(lower.status().code(), absl::StatusCode::kInvalidArgument) << lower.status();
  return std::string(lower.status().message());
}

TEST(CorrelationTest, IdentityGivesIdentity) {
  for (const int64_t n : {int64_t{1}, int64_t{3}, int64_t{8}}) {
    absl::StatusOr<std::vector<float>> lower = CholeskyFactor(Identity(n), n);
    ASSERT_TRUE(lower.ok()) << lower.status();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) EXPECT_EQ(At(*lower, n, i, j), i == j ? 1.0f : 0.0f);
    }
  }
}

TEST(CorrelationTest, FactorReproducesTheMatrix) {
  // Two issuers by hand: L = [[1, 0], [rho, sqrt(1 - rho^2)]].
  const std::vector<double> pair = {1.0, 0.6, 0.6, 1.0};
  absl::StatusOr<std::vector<float>> lower = CholeskyFactor(pair, 2);
  ASSERT_TRUE(lower.ok()) << lower.status();
  EXPECT_EQ(At(*lower, 2, 0, 0), 1.0f);
  EXPECT_EQ(At(*lower, 2, 0, 1), 0.0f);
  EXPECT_FLOAT_EQ(At(*lower, 2, 1, 0), 0.6f);
  EXPECT_FLOAT_EQ(At(*lower, 2, 1, 1), 0.8f);

  ExpectFactorOf(pair, 2);
  ExpectFactorOf({1.0, 0.999, 0.999, 1.0}, 2);
  ExpectFactorOf({1.0, 0.6, -0.3, 0.2,   //
                  0.6, 1.0, 0.1, 0.4,    //
                  -0.3, 0.1, 1.0, -0.5,  //
                  0.2, 0.4, -0.5, 1.0},
                 4);
  // 600 issuers: three blocks of the blocked factorisation (256, 256, 88).
  for (const int64_t n : {int64_t{5}, int64_t{20}, int64_t{64}, int64_t{600}}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    ExpectFactorOf(RandomCorrelation(n, static_cast<uint64_t>(n)), n);
  }
}

TEST(CorrelationTest, DecimalRoundingIsTolerated) {
  // Entries written out in decimal may differ from symmetry or from 1 by a
  // few ulps.
  const std::vector<double> c = {1.0 + 1e-12, 0.3, 0.3 + 1e-12, 1.0 - 1e-12};
  ExpectFactorOf(c, 2);
}

TEST(CorrelationTest, AsymmetricMatrixIsRefusedNamingBothEntries) {
  std::vector<double> c = Identity(3);
  c[1 * 3 + 2] = 0.3;
  c[2 * 3 + 1] = 0.2;
  EXPECT_THAT(Refusal(c, 3), AllOf(HasSubstr("market.correlation[1, 2] is 0.3"),
                                   HasSubstr("symmetric"), HasSubstr("[2, 1] is 0.2")));
}

TEST(CorrelationTest, DiagonalOtherThanOneIsRefused) {
  std::vector<double> c = Identity(3);
  c[2 * 3 + 2] = 0.9;
  EXPECT_THAT(Refusal(c, 3),
              AllOf(HasSubstr("market.correlation[2, 2] is 0.9"), HasSubstr("diagonal")));
}

TEST(CorrelationTest, EntriesOutsideMinusOneToOneAreRefused) {
  std::vector<double> c = Identity(3);
  c[0 * 3 + 1] = c[1 * 3 + 0] = 1.5;
  EXPECT_THAT(Refusal(c, 3),
              AllOf(HasSubstr("market.correlation[0, 1] is 1.5"), HasSubstr("[-1, 1]")));
  c[0 * 3 + 1] = c[1 * 3 + 0] = -1.01;
  EXPECT_THAT(Refusal(c, 3), AllOf(HasSubstr("[0, 1] is -1.01"), HasSubstr("[-1, 1]")));
  c = Identity(3);
  c[2 * 3 + 0] = c[0 * 3 + 2] = std::nan("");
  EXPECT_THAT(Refusal(c, 3), AllOf(HasSubstr("market.correlation[0, 2]"), HasSubstr("[-1, 1]")));
  c = Identity(3);
  c[1 * 3 + 1] = std::numeric_limits<double>::infinity();
  EXPECT_THAT(Refusal(c, 3), AllOf(HasSubstr("market.correlation[1, 1]"), HasSubstr("[-1, 1]")));
}

TEST(CorrelationTest, MatrixThatIsNotPositiveDefiniteIsRefused) {
  // Valid entries, symmetric, unit diagonal, but no three variables behave
  // so: 1 and 2 both move with 0, yet against each other.
  const std::vector<double> impossible = {1.0, 0.9,  0.9,   //
                                          0.9, 1.0,  -0.9,  //
                                          0.9, -0.9, 1.0};
  EXPECT_THAT(Refusal(impossible, 3), HasSubstr("positive definite"));
  // A correlation of exactly 1 between two issuers is singular.
  const std::vector<double> twins = {1.0, 1.0, 0.2,  //
                                     1.0, 1.0, 0.2,  //
                                     0.2, 0.2, 1.0};
  EXPECT_THAT(Refusal(twins, 3), AllOf(HasSubstr("positive definite"), HasSubstr("0.999")));
  const std::vector<double> opposites = {1.0, -1.0, -1.0, 1.0};
  EXPECT_THAT(Refusal(opposites, 2), HasSubstr("positive definite"));
  // Twins in the second block of 256 columns: the row named is the matrix's.
  std::vector<double> late_twins = Identity(400);
  late_twins[299 * 400 + 300] = late_twins[300 * 400 + 299] = 1.0;
  EXPECT_THAT(Refusal(late_twins, 400),
              AllOf(HasSubstr("positive definite"), HasSubstr("fails at row 300 ")));
}

TEST(CorrelationTest, AStopBetweenBlocksEndsTheFactorisationWithItsStatus) {
  const int64_t n = 600;  // three blocks
  int polls = 0;
  absl::StatusOr<std::vector<float>> lower =
      CholeskyFactor(RandomCorrelation(n, 7), n, [&polls]() -> absl::Status {
        return ++polls == 2 ? absl::CancelledError("job cancelled") : absl::OkStatus();
      });
  EXPECT_EQ(lower.status(), absl::CancelledError("job cancelled"));
  EXPECT_EQ(polls, 2);
  polls = 0;
  ASSERT_TRUE(CholeskyFactor(RandomCorrelation(n, 7), n, [&polls] {
                ++polls;
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(polls, 3);  // once before each block
}

}  // namespace
}  // namespace pricer
