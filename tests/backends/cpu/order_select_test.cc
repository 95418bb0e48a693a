// The cpu reducer's selection (OrderSelect): every kernel returns the exact
// order statistics a full sort gives, for any sizes, ranks and ties.
#include "server/backends/cpu/order_select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace pricer {
namespace {

constexpr ReducerKernel kKernels[] = {ReducerKernel::kPortable, ReducerKernel::kAvx2,
                                      ReducerKernel::kAvx512};

// Checks every kernel's selection of `ranks` of `values` against std::sort;
// the values are left as they were.
void ExpectSortedRanks(const std::vector<float>& values, const std::vector<int64_t>& ranks) {
  std::vector<float> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  for (const ReducerKernel kernel : kKernels) {
    SCOPED_TRACE("kernel " + std::to_string(static_cast<int>(kernel)));
    OrderSelect select(kernel);
    const std::vector<float> before = values;
    std::vector<float> out(ranks.size(), -1.0f);
    select.Select(values.data(), static_cast<int64_t>(values.size()), ranks, out.data());
    for (size_t k = 0; k < ranks.size(); ++k) {
      EXPECT_EQ(out[k], sorted[static_cast<size_t>(ranks[k])]) << "rank " << ranks[k];
    }
    EXPECT_EQ(values, before);
  }
}

std::vector<float> Normal(size_t n, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal(100.0f, 5.0f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(generator);
  return values;
}

TEST(OrderSelectTest, EveryRankOfSmallArrays) {
  // Each size across the rank count's, the partition's vector widths and
  // their remainders, every rank at once and each alone.
  for (size_t n = 1; n <= 70; ++n) {
    SCOPED_TRACE("n " + std::to_string(n));
    const std::vector<float> values = Normal(n, n);
    std::vector<int64_t> all(n);
    for (size_t r = 0; r < n; ++r) all[r] = static_cast<int64_t>(r);
    ExpectSortedRanks(values, all);
    for (size_t r = 0; r < n; ++r) ExpectSortedRanks(values, {static_cast<int64_t>(r)});
  }
}

TEST(OrderSelectTest, ReducerRanksOfLargeArrays) {
  // The reducer's shapes: the tail ranks of a window of hundreds, the
  // median of a whole column, a band, the ends.
  for (const size_t n : {size_t{257}, size_t{700}, size_t{2048}, size_t{10'001}}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const auto last = static_cast<int64_t>(n) - 1;
    const std::vector<float> values = Normal(n, 3 * n);
    ExpectSortedRanks(values, {99, 100, 249, 250});
    ExpectSortedRanks(values, {last / 2, last / 2 + 1});
    ExpectSortedRanks(values, {0, 1, 17, last - 1, last});
    std::vector<int64_t> band;
    for (int64_t r = 40; r < 140; r += 3) band.push_back(r);
    ExpectSortedRanks(values, band);
  }
}

TEST(OrderSelectTest, TiesSortedAndAdversarialOrders) {
  // Few levels (ties at every pivot), one value, ascending and descending
  // runs (the pivots' sample spread evenly), a spike every 16th value,
  // infinities and signed zeros.
  std::mt19937_64 generator(5);
  std::uniform_int_distribution<int> level(0, 3);
  std::vector<float> tied(1000);
  for (float& v : tied) v = static_cast<float>(level(generator));
  std::vector<float> ascending(1000), descending(1000), spiked = Normal(1000, 9);
  for (size_t i = 0; i < 1000; ++i) {
    ascending[i] = static_cast<float>(i);
    descending[i] = static_cast<float>(1000 - i);
    if (i % 16 == 0) spiked[i] = -1e6f - static_cast<float>(i);
  }
  std::vector<float> special = Normal(300, 11);
  const float infinity = std::numeric_limits<float>::infinity();
  special[3] = -infinity, special[50] = infinity, special[51] = infinity;
  special[60] = 0.0f, special[61] = -0.0f;
  for (const std::vector<float>& values :
       {tied, std::vector<float>(1000, 2.5f), ascending, descending, spiked, special}) {
    const auto last = static_cast<int64_t>(values.size()) - 1;
    std::vector<int64_t> ranks = {0, 24, 25, 249, 250, last / 2, last};
    std::sort(ranks.begin(), ranks.end());
    ExpectSortedRanks(values, ranks);
  }
}

TEST(OrderSelectTest, RanksCountFromFirst) {
  // A window's ranks are the column's, past the `first` values under it.
  const std::vector<float> values = Normal(700, 17);
  std::vector<float> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const std::vector<int64_t> ranks = {4099, 4100, 4249, 4250, 4699};
  for (const ReducerKernel kernel : kKernels) {
    OrderSelect select(kernel);
    std::vector<float> out(ranks.size());
    select.Select(values.data(), static_cast<int64_t>(values.size()), ranks, out.data(), 4000);
    for (size_t k = 0; k < ranks.size(); ++k) {
      EXPECT_EQ(out[k], sorted[static_cast<size_t>(ranks[k] - 4000)]);
    }
  }
}

TEST(OrderSelectTest, RangesPastTheDepthLimitAreSortedExactly) {
  // Depth limits of 0 (sort at once), 1 and 2 (sort the parts of the first
  // splits): the fallback for pivots defeated every time.
  const std::vector<float> values = Normal(1000, 21);
  std::vector<float> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const std::vector<int64_t> ranks = {0, 99, 100, 249, 250, 500, 999};
  for (const ReducerKernel kernel : kKernels) {
    for (int limit = 0; limit <= 2; ++limit) {
      OrderSelect select(kernel, limit);
      std::vector<float> out(ranks.size());
      select.Select(values.data(), static_cast<int64_t>(values.size()), ranks, out.data());
      for (size_t k = 0; k < ranks.size(); ++k) {
        EXPECT_EQ(out[k], sorted[static_cast<size_t>(ranks[k])]) << "limit " << limit;
      }
    }
  }
}

TEST(OrderSelectTest, OneSelectServesManyArrays) {
  // Scratch kept between calls does not leak into the next one.
  OrderSelect select;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> values = Normal(100 + 97 * seed, seed);
    std::vector<float> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    const std::vector<int64_t> ranks = {0, 7, static_cast<int64_t>(values.size()) - 1};
    std::vector<float> out(ranks.size());
    select.Select(values.data(), static_cast<int64_t>(values.size()), ranks, out.data());
    for (size_t k = 0; k < ranks.size(); ++k) {
      EXPECT_EQ(out[k], sorted[static_cast<size_t>(ranks[k])]);
    }
  }
}

}  // namespace
}  // namespace pricer
