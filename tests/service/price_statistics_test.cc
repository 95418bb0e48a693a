// The statistics of Price calls of a real in-process server: those of full
// output against a float64 recomputation from the returned SC, exactly the
// requested arrays when only statistics are asked for, the default output,
// and the risk statistics (quantiles, VaR, ES) against float64.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/model/statistics_reference.h"
#include "tests/service/service_test_util.h"

namespace pricer::testing {
namespace {

using ::testing::ElementsAre;

TEST(Price, FullOutputMatchesFloat64Reference) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const int64_t issuers = 16, paths = 2000, columns = 150;
  v1::PriceRequest request = SmallRequest(issuers, paths, columns);
  const std::vector<float> a = TestMatrix(issuers, columns);
  SetInlineMatrix(a, issuers, columns, &request);
  request.mutable_output()->set_full(true);
  request.mutable_output()->mutable_statistics();  // present but empty: the basic four
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->set_chunk_columns(40);
  const PriceCall call = RunPrice(*NewStub(*server), request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ExpectResultIsProduct(call, request, a);

  // The statistics of each column, recomputed in float64 from the SC values
  // of the same request.
  const std::vector<float> sc = AssembleResult(call, paths, columns, 0, columns);
  int64_t checked = 0;
  for (const v1::PriceReply& reply : call.replies) {
    if (!reply.has_chunk()) continue;
    const v1::ResultChunk& chunk = reply.chunk();
    const v1::ColumnStatistics& s = chunk.statistics();
    ASSERT_EQ(s.mean_size(), chunk.column_end() - chunk.column_begin());
    ASSERT_EQ(s.v0_size(), chunk.column_end() - chunk.column_begin());
    for (int64_t j = chunk.column_begin(); j < chunk.column_end(); ++j) {
      const int k = static_cast<int>(j - chunk.column_begin());
      const float* column = sc.data() + j * paths;
      double sum = 0;
      float lo = column[0], hi = column[0];
      for (int64_t p = 0; p < paths; ++p) {
        sum += column[p];
        lo = std::min(lo, column[p]);
        hi = std::max(hi, column[p]);
      }
      const double mean = sum / paths;
      double squares = 0;
      for (int64_t p = 0; p < paths; ++p) squares += (column[p] - mean) * (column[p] - mean);
      const double stddev = std::sqrt(squares / (paths - 1));
      double v0 = 0;
      for (int64_t i = 0; i < issuers; ++i) {
        v0 += a[j * issuers + i] * request.market().explicit_().spot(i);
      }
      EXPECT_NEAR(s.v0(k), v0, 1e-12 * std::abs(v0)) << "column " << j;
      EXPECT_NEAR(s.mean(k), mean, 1e-9 * std::abs(mean)) << "column " << j;
      EXPECT_NEAR(s.stddev(k), stddev, 1e-9 * stddev) << "column " << j;
      EXPECT_EQ(s.min(k), lo) << "column " << j;
      EXPECT_EQ(s.max(k), hi) << "column " << j;
      EXPECT_GT(stddev, 0) << "column " << j;
      ++checked;
    }
  }
  EXPECT_EQ(checked, columns);
}

std::vector<double> Levels(const google::protobuf::RepeatedPtrField<v1::LevelValues>& levels) {
  std::vector<double> out;
  for (const v1::LevelValues& l : levels) out.push_back(l.level());
  return out;
}

TEST(Price, StatisticsOnlyCarriesV0AndExactlyTheRequestedArrays) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const int64_t issuers = 6, paths = 3000, columns = 300;
  v1::PriceRequest request = SmallRequest(issuers, paths, columns);
  v1::StatisticsSelection* selection = request.mutable_output()->mutable_statistics();
  selection->set_stddev(true);
  for (double q : {0.9, 0.1, 0.5}) selection->add_quantiles(q);
  for (double a : {0.99, 0.95}) selection->add_var(a);
  selection->add_es(0.975);
  request.mutable_output()->set_chunk_columns(64);
  const PriceCall call = RunPrice(*NewStub(*server), request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();

  int64_t chunk_columns = 0;
  for (const v1::PriceReply& reply : call.replies) {
    if (!reply.has_chunk()) continue;
    const v1::ResultChunk& chunk = reply.chunk();
    const int64_t width = chunk.column_end() - chunk.column_begin();
    chunk_columns += width;
    EXPECT_TRUE(chunk.values().empty()) << chunk.values().size() << " bytes of SC";
    ASSERT_TRUE(chunk.has_statistics());
    const v1::ColumnStatistics& s = chunk.statistics();
    EXPECT_EQ(s.v0_size(), width);
    EXPECT_EQ(s.stddev_size(), width);
    EXPECT_EQ(s.mean_size(), 0);
    EXPECT_EQ(s.min_size(), 0);
    EXPECT_EQ(s.max_size(), 0);
    EXPECT_THAT(Levels(s.quantiles()), ElementsAre(0.9, 0.1, 0.5));
    EXPECT_THAT(Levels(s.var()), ElementsAre(0.99, 0.95));
    EXPECT_THAT(Levels(s.es()), ElementsAre(0.975));
    for (const auto* levels : {&s.quantiles(), &s.var(), &s.es()}) {
      for (const v1::LevelValues& l : *levels) EXPECT_EQ(l.values_size(), width);
    }
    if (::testing::Test::HasFailure()) return;
    for (int k = 0; k < width; ++k) {
      // Quantiles in the order of their levels; the 99% loss above the 95%
      // one; ES_0.975 >= VaR_0.975 >= VaR_0.95.
      EXPECT_LE(s.quantiles(1).values(k), s.quantiles(2).values(k));
      EXPECT_LE(s.quantiles(2).values(k), s.quantiles(0).values(k));
      EXPECT_GT(s.var(0).values(k), s.var(1).values(k));
      EXPECT_GT(s.es(0).values(k), s.var(1).values(k));
      EXPECT_GT(s.var(1).values(k), 0);
      EXPECT_GT(s.stddev(k), 0);
      EXPECT_GT(s.v0(k), 0);
    }
  }
  EXPECT_EQ(chunk_columns, columns);
  ASSERT_TRUE(call.replies.back().has_finished());
  // Per column: v0, stddev, 3 quantiles, 2 VaR and 1 ES, all float64.
  EXPECT_EQ(call.replies.back().finished().bytes(), 8 * 8 * columns);
}

TEST(Price, DefaultOutputIsV0AndTheBasicFour) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const int64_t columns = 100;
  const PriceCall call = RunPrice(*NewStub(*server), SmallRequest(4, 500, columns));
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  int64_t seen = 0;
  for (const v1::PriceReply& reply : call.replies) {
    if (!reply.has_chunk()) continue;
    const int64_t width = reply.chunk().column_end() - reply.chunk().column_begin();
    const v1::ColumnStatistics& s = reply.chunk().statistics();
    EXPECT_TRUE(reply.chunk().values().empty());
    EXPECT_EQ(s.v0_size(), width);
    EXPECT_EQ(s.mean_size(), width);
    EXPECT_EQ(s.stddev_size(), width);
    EXPECT_EQ(s.min_size(), width);
    EXPECT_EQ(s.max_size(), width);
    EXPECT_EQ(s.quantiles_size() + s.var_size() + s.es_size(), 0);
    seen += width;
  }
  EXPECT_EQ(seen, columns);
  ASSERT_TRUE(call.replies.back().has_finished());
  EXPECT_EQ(call.replies.back().finished().bytes(), 5 * 8 * columns);
}

// Within 1e-12 relative (absolute below 1) of the float64 value.
bool NearFloat64(double got, double want) {
  return std::abs(got - want) <= 1e-12 * std::max(1.0, std::abs(want));
}

// Reports statistic `what` of column j unless `ok`.
using ExpectStatistic =
    std::function<void(bool ok, const std::string& what, int64_t j, double got, double want)>;

// The statistics of column j, at offset k of `s`, against their float64
// recomputation from `sorted` (its SC values in order), its V0 `v0` and the
// discount e^{-rT}: V0, VaR and ES within NearFloat64, quantiles exactly.
void ExpectColumnMatchesFloat64(const v1::ColumnStatistics& s, int k, int64_t j,
                                const v1::StatisticsSelection& selection,
                                const std::vector<float>& sorted, double v0, double discount,
                                const ExpectStatistic& expect) {
  expect(NearFloat64(s.v0(k), v0), "v0", j, s.v0(k), v0);
  for (int l = 0; l < selection.quantiles_size(); ++l) {
    ASSERT_EQ(s.quantiles(l).level(), selection.quantiles(l));
    const double want = ReferenceQuantile(sorted, selection.quantiles(l));
    const double got = s.quantiles(l).values(k);
    expect(got == want, absl::StrCat("quantile ", selection.quantiles(l)), j, got, want);
  }
  for (int l = 0; l < selection.var_size(); ++l) {
    ASSERT_EQ(s.var(l).level(), selection.var(l));
    const double want = v0 - discount * ReferenceQuantile(sorted, 1 - selection.var(l));
    const double got = s.var(l).values(k);
    expect(NearFloat64(got, want), absl::StrCat("VaR ", selection.var(l)), j, got, want);
  }
  for (int l = 0; l < selection.es_size(); ++l) {
    ASSERT_EQ(s.es(l).level(), selection.es(l));
    const double want = v0 - discount * ReferenceTailMean(sorted, 1 - selection.es(l));
    const double got = s.es(l).values(k);
    expect(NearFloat64(got, want), absl::StrCat("ES ", selection.es(l)), j, got, want);
  }
}

// Full SC with `selection` on an inline matrix; every statistic of every
// column against a float64 recomputation from the returned SC, with
// V0 = sum_i A[i, j] S0[i] from the request.
void ExpectRiskStatisticsMatchFloat64(int64_t paths, const v1::StatisticsSelection& selection) {
  SCOPED_TRACE(::testing::Message() << paths << " paths");
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const int64_t issuers = 10, columns = 90;
  v1::PriceRequest request = SmallRequest(issuers, paths, columns);
  request.set_rate(0.05);
  request.set_maturity(2.0);
  const std::vector<float> a = TestMatrix(issuers, columns);
  SetInlineMatrix(a, issuers, columns, &request);
  request.mutable_output()->set_full(true);
  *request.mutable_output()->mutable_statistics() = selection;
  request.mutable_output()->set_chunk_columns(32);
  const PriceCall call = RunPrice(*NewStub(*server), request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  const std::vector<float> sc = AssembleResult(call, paths, columns, 0, columns);
  if (::testing::Test::HasFailure()) return;

  const double discount = std::exp(-request.rate() * request.maturity());
  int64_t checked = 0, mismatches = 0;
  auto expect = [&](bool ok, const std::string& what, int64_t j, double got, double want) {
    if (!ok && mismatches++ < 10) {
      ADD_FAILURE() << what << " of column " << j << ": " << got << ", float64 " << want;
    }
  };
  for (const v1::PriceReply& reply : call.replies) {
    if (!reply.has_chunk()) continue;
    const v1::ResultChunk& chunk = reply.chunk();
    const v1::ColumnStatistics& s = chunk.statistics();
    const int64_t width = chunk.column_end() - chunk.column_begin();
    ASSERT_EQ(s.v0_size(), width);
    ASSERT_EQ(s.quantiles_size(), selection.quantiles_size());
    ASSERT_EQ(s.var_size(), selection.var_size());
    ASSERT_EQ(s.es_size(), selection.es_size());
    for (int64_t j = chunk.column_begin(); j < chunk.column_end(); ++j) {
      const int k = static_cast<int>(j - chunk.column_begin());
      std::vector<float> sorted(sc.begin() + j * paths, sc.begin() + (j + 1) * paths);
      std::sort(sorted.begin(), sorted.end());
      double v0 = 0;
      for (int64_t i = 0; i < issuers; ++i) {
        v0 += a[j * issuers + i] * request.market().explicit_().spot(i);
      }
      ASSERT_NO_FATAL_FAILURE(
          ExpectColumnMatchesFloat64(s, k, j, selection, sorted, v0, discount, expect));
      ++checked;
    }
  }
  EXPECT_EQ(checked, columns);
  EXPECT_EQ(mismatches, 0);
  ASSERT_TRUE(call.replies.back().has_finished());
  const v1::JobFinished& finished = call.replies.back().finished();
  EXPECT_GT(finished.gemm_seconds(), 0);
  EXPECT_GT(finished.statistics_seconds(), 0);
}

v1::StatisticsSelection Selection(std::vector<double> quantiles, std::vector<double> var,
                                  std::vector<double> es) {
  v1::StatisticsSelection selection;
  selection.mutable_quantiles()->Assign(quantiles.begin(), quantiles.end());
  selection.mutable_var()->Assign(var.begin(), var.end());
  selection.mutable_es()->Assign(es.begin(), es.end());
  return selection;
}

// Low levels only: the server selects within a sampled lower tail.
TEST(Price, TailRiskStatisticsMatchFloat64Recomputation) {
  ExpectRiskStatisticsMatchFloat64(5000,
                                   Selection({0.02, 0.001}, {0.99, 0.95, 0.999}, {0.975, 0.99}));
}

// Levels across the range, including 0 and 1: the server orders whole columns.
TEST(Price, RiskStatisticsOverTheWholeRangeMatchFloat64Recomputation) {
  ExpectRiskStatisticsMatchFloat64(
      4097, Selection({0, 0.01, 0.25, 0.5, 0.975, 1}, {0.99, 0.5}, {0.975, 0.5, 0.01}));
}

// Few paths, where the interpolation between order statistics matters.
TEST(Price, RiskStatisticsOfFewPathsMatchFloat64Recomputation) {
  ExpectRiskStatisticsMatchFloat64(7, Selection({0.1, 0.5, 0.9}, {0.9, 0.7}, {0.9, 0.6}));
  ExpectRiskStatisticsMatchFloat64(1, Selection({0.3}, {0.9}, {0.9}));
}

}  // namespace
}  // namespace pricer::testing
