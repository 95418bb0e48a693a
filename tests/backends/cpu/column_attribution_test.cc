// The cpu backend's contributions a block at a time (column_attribution.h):
// every kernel (portable, AVX2, AVX-512) gives the same bits, and each
// column's contributions are the float64 mean over its band's paths
// recomputed from a stable sort, on columns with ties in their tails.
#include "server/backends/cpu/column_attribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace pricer {
namespace {

constexpr int64_t kPaths = 3000, kRows = 150, kColumns = 37;
constexpr double kDiscount = 0.97;

struct Block {
  std::vector<float> by_path;    // X, P x R row-major
  std::vector<float> positions;  // A, R x columns column-major
  std::vector<float> values;     // P x columns column-major: a few levels, so the tails tie
  std::vector<double> today;
};

Block MakeBlock() {
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
  Block b;
  b.by_path.resize(kPaths * kRows);
  for (float& x : b.by_path) x = uniform(random);
  b.positions.resize(kRows * kColumns);
  for (float& a : b.positions) a = uniform(random) - 1.0f;
  b.values.resize(kPaths * kColumns);
  for (float& v : b.values) v = std::floor(uniform(random) * 40.0f);
  b.today.resize(kRows);
  for (double& t : b.today) t = uniform(random);
  return b;
}

StatisticsSelection Selection(bool errors) {
  StatisticsSelection s;
  s.es = {0.975};
  s.var = {0.99};
  s.es_contributions = {0.975};
  s.var_contributions = {0.99};
  s.errors = errors;
  return s;
}

ColumnStatistics Attribute(const Block& b, bool errors, ReducerKernel kernel) {
  const StatisticsSelection selection = Selection(errors);
  ColumnReducer reducer(selection, kPaths, kDiscount, kernel);
  const AttributionInputs inputs{kPaths, kRows, 0, b.by_path.data(), b.today.data(), kDiscount};
  ColumnAttribution attribution(selection, inputs, kernel);
  ColumnStatistics out;
  out.Resize(selection, kColumns, kRows);
  attribution.Begin(kColumns);
  for (int64_t c = 0; c < kColumns; ++c) {
    const float* values = b.values.data() + c * kPaths;
    reducer.Reduce(values, 0.0, c, &out);
    attribution.Select(c, values, reducer);
  }
  attribution.Finish(b.positions.data(), 0, &out);
  return out;
}

TEST(ColumnAttributionTest, EveryKernelGivesTheSameBits) {
  const Block b = MakeBlock();
  for (const bool errors : {false, true}) {
    const ColumnStatistics portable = Attribute(b, errors, ReducerKernel::kPortable);
    for (const ReducerKernel kernel : {ReducerKernel::kAvx2, ReducerKernel::kAvx512}) {
      const ColumnStatistics other = Attribute(b, errors, kernel);
      EXPECT_EQ(other.contributions, portable.contributions);
      EXPECT_EQ(other.contributions_se, portable.contributions_se);
    }
  }
}

TEST(ColumnAttributionTest, EachColumnAveragesItsBandByAStableSort) {
  const Block b = MakeBlock();
  const ColumnStatistics out = Attribute(b, false, ReducerKernel::kBest);
  for (int64_t c = 0; c < kColumns; ++c) {
    const float* values = b.values.data() + c * kPaths;
    std::vector<int64_t> order(kPaths);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t p, int64_t q) { return values[p] < values[q]; });
    // ES 0.975: the 75 smallest (2,999 x 0.025 = 74.975); VaR 0.99: ranks
    // 29 and 30, 27 each side (floor(sqrt(3,000) / 2)).
    for (const auto& [l, first, last] : {std::tuple{0, 0, 74}, std::tuple{1, 2, 57}}) {
      for (int64_t r = 0; r < kRows; ++r) {
        double sum = 0;
        for (int64_t k = first; k <= last; ++k) {
          sum += b.by_path[static_cast<size_t>(order[static_cast<size_t>(k)] * kRows + r)];
        }
        const double a = b.positions[static_cast<size_t>(c * kRows + r)];
        const double expected =
            -a * (kDiscount * sum / static_cast<double>(last - first + 1) - b.today[r]);
        ASSERT_NEAR(out.contributions[l][static_cast<size_t>(c * kRows + r)], expected,
                    1e-6 * (std::abs(a) * 2))
            << "column " << c << " row " << r << " level " << l;
      }
    }
  }
}

}  // namespace
}  // namespace pricer
