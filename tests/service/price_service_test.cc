// The Price and ListDevices calls of a real in-process server: reply order
// and plan, results and risk statistics against a float64 reference,
// correlated and antithetic shocks, reproducibility across chunk widths and
// column ranges, and the device accounting.
#include <algorithm>
#include <cmath>
#include <cstring>
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

// Payload bytes of one reply as JobFinished.bytes counts them.
int64_t PayloadBytes(const v1::PriceReply& reply) {
  if (reply.has_prices()) return static_cast<int64_t>(reply.prices().values().size());
  if (!reply.has_chunk()) return 0;
  const v1::ColumnStatistics& s = reply.chunk().statistics();
  int64_t doubles = s.v0_size() + s.mean_size() + s.stddev_size() + s.min_size() + s.max_size();
  for (const auto* levels : {&s.quantiles(), &s.var(), &s.es()}) {
    for (const v1::LevelValues& level : *levels) doubles += level.values_size();
  }
  return static_cast<int64_t>(reply.chunk().values().size()) + 8 * doubles;
}

const v1::JobAccepted& Accepted(const PriceCall& call) {
  static const v1::JobAccepted kNone;
  if (call.replies.empty() || !call.replies.front().has_accepted()) return kNone;
  return call.replies.front().accepted();
}

TEST(Price, RepliesComeAcceptedThenChunksThenFinished) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const int64_t issuers = 8, paths = 2000, columns = 300;
  v1::PriceRequest request = SmallRequest(issuers, paths, columns);
  request.mutable_output()->set_full(true);
  request.mutable_output()->mutable_statistics();  // present but empty: the basic four
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->set_chunk_columns(50);
  const PriceCall call = RunPrice(*NewStub(*server), request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ASSERT_GE(call.replies.size(), 3u);

  ASSERT_TRUE(call.replies.front().has_accepted());
  const v1::JobAccepted& accepted = call.replies.front().accepted();
  EXPECT_FALSE(accepted.job_id().empty());
  EXPECT_GE(accepted.plan().shard_count(), 1);
  EXPECT_GT(accepted.plan().shard_columns(), 0);
  EXPECT_EQ(accepted.plan().shard_columns() % 64, 0);
  EXPECT_GE(accepted.plan().shard_columns() * accepted.plan().shard_count(), columns);
  EXPECT_EQ(accepted.plan().chunk_columns(), 50);
  EXPECT_THAT(accepted.plan().devices(), ElementsAre("cpu0"));
  EXPECT_EQ(accepted.issuers(), issuers);
  EXPECT_EQ(accepted.paths(), paths);
  EXPECT_EQ(accepted.column_begin(), 0);
  EXPECT_EQ(accepted.column_end(), columns);

  ASSERT_TRUE(call.replies.back().has_finished());
  int64_t payload = 0, chunk_columns = 0, price_chunks = 0;
  for (size_t k = 1; k + 1 < call.replies.size(); ++k) {
    const v1::PriceReply& reply = call.replies[k];
    ASSERT_TRUE(reply.has_chunk() || reply.has_prices()) << "reply " << k << " is out of order";
    payload += PayloadBytes(reply);
    if (reply.has_prices()) {
      ++price_chunks;
      const v1::TerminalPricesChunk& prices = reply.prices();
      EXPECT_EQ(static_cast<int64_t>(prices.values().size()),
                4 * prices.rows() * (prices.issuer_end() - prices.issuer_begin()));
      continue;
    }
    const v1::ResultChunk& chunk = reply.chunk();
    const int64_t width = chunk.column_end() - chunk.column_begin();
    EXPECT_GE(width, 1);
    EXPECT_LE(width, 50);
    EXPECT_EQ(chunk.rows(), paths);
    EXPECT_EQ(static_cast<int64_t>(chunk.values().size()), 4 * chunk.rows() * width);
    EXPECT_EQ(chunk.statistics().v0_size(), width);
    EXPECT_EQ(chunk.statistics().mean_size(), width);
    EXPECT_EQ(chunk.statistics().stddev_size(), width);
    EXPECT_EQ(chunk.statistics().min_size(), width);
    EXPECT_EQ(chunk.statistics().max_size(), width);
    EXPECT_EQ(chunk.statistics().quantiles_size(), 0);
    EXPECT_EQ(chunk.statistics().var_size(), 0);
    EXPECT_EQ(chunk.statistics().es_size(), 0);
    chunk_columns += width;
  }
  EXPECT_EQ(chunk_columns, columns);
  EXPECT_EQ(price_chunks, 1);  // 8 issuers of 2000 paths fit one message
  AssembleResult(call, paths, columns, 0, columns);
  AssembleTerminalPrices(call, paths, issuers);

  const v1::JobFinished& finished = call.replies.back().finished();
  EXPECT_EQ(finished.flops(), 2.0 * paths * issuers * columns);
  EXPECT_EQ(finished.bytes(), payload);
  // Per column: P float32 values and five float64 statistics (v0 and the basic four).
  EXPECT_EQ(payload, 4 * paths * issuers + (4 * paths + 40) * columns);
  EXPECT_GE(finished.elapsed_seconds(), 0);
}

TEST(Price, MillionPathRepliesFitTheDefaultReceiveLimit) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const int64_t issuers = 2, paths = 1'000'000, columns = 3;
  v1::PriceRequest request = SmallRequest(issuers, paths, columns);
  request.mutable_output()->set_full(true);
  request.mutable_output()->mutable_statistics();  // present but empty: the basic four
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->set_chunk_columns(3);
  // The stub keeps gRPC's default 4 MiB receive limit: a bigger reply would
  // end the call with RESOURCE_EXHAUSTED.
  const PriceCall call = RunPrice(*NewStub(*server), request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  EXPECT_EQ(Accepted(call).plan().chunk_columns(), 1);  // lowered from 3
  int64_t chunks = 0, prices = 0;
  for (const v1::PriceReply& reply : call.replies) {
    EXPECT_LT(reply.ByteSizeLong(), 4u << 20);
    if (reply.has_chunk()) {
      ++chunks;
      EXPECT_EQ(reply.chunk().values().size(), 4u * paths);
    }
    if (reply.has_prices()) {
      ++prices;
      EXPECT_EQ(reply.prices().values().size(), 4u * paths);
    }
  }
  EXPECT_EQ(chunks, columns);
  EXPECT_EQ(prices, issuers);
  ASSERT_TRUE(call.replies.back().has_finished());
  EXPECT_EQ(call.replies.back().finished().flops(), 2.0 * paths * issuers * columns);
}

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

// Full SC of `request` with the given chunk width and column range.
std::vector<float> FullResult(v1::Pricer::Stub& stub, v1::PriceRequest request,
                              int64_t chunk_columns, int64_t begin, int64_t end) {
  request.mutable_output()->set_full(true);
  request.mutable_output()->set_chunk_columns(chunk_columns);
  request.set_column_begin(begin);
  request.set_column_end(end);
  const PriceCall call = RunPrice(stub, request);
  EXPECT_TRUE(call.status.ok()) << call.status.error_message();
  const v1::JobAccepted& accepted = Accepted(call);
  const int64_t columns = request.scenarios().generated().columns();
  EXPECT_EQ(accepted.column_begin(), begin);
  EXPECT_EQ(accepted.column_end(), end == 0 ? columns : end);
  if (chunk_columns > 0) {
    EXPECT_EQ(accepted.plan().chunk_columns(), chunk_columns);
    for (const v1::PriceReply& reply : call.replies) {
      if (reply.has_chunk()) {
        EXPECT_LE(reply.chunk().column_end() - reply.chunk().column_begin(), chunk_columns);
      }
    }
  }
  return AssembleResult(call, request.paths(), columns, begin, end == 0 ? columns : end);
}

TEST(Price, ResultIsBitwiseIdenticalAcrossChunkWidthsAndColumnRanges) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const int64_t issuers = 20, paths = 1000, columns = 400;
  const v1::PriceRequest request = SmallRequest(issuers, paths, columns);

  const std::vector<float> by64 = FullResult(*stub, request, 64, 0, 0);
  const std::vector<float> by5 = FullResult(*stub, request, 5, 0, 0);
  ASSERT_EQ(by64.size(), by5.size());
  EXPECT_EQ(std::memcmp(by64.data(), by5.data(), by64.size() * sizeof(float)), 0);

  const std::vector<float> range = FullResult(*stub, request, 0, 70, 300);
  ASSERT_EQ(range.size(), by64.size());
  EXPECT_EQ(std::memcmp(range.data() + 70 * paths, by64.data() + 70 * paths,
                        (300 - 70) * paths * sizeof(float)),
            0);
  EXPECT_TRUE(std::isnan(range[69 * paths]));
  EXPECT_TRUE(std::isnan(range[300 * paths]));
  EXPECT_FALSE(std::isnan(by64[0]));
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
  auto near = [](double got, double want) {
    return std::abs(got - want) <= 1e-12 * std::max(1.0, std::abs(want));
  };
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
      expect(near(s.v0(k), v0), "v0", j, s.v0(k), v0);
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
        expect(near(got, want), absl::StrCat("VaR ", selection.var(l)), j, got, want);
      }
      for (int l = 0; l < selection.es_size(); ++l) {
        ASSERT_EQ(s.es(l).level(), selection.es(l));
        const double q = ReferenceQuantile(sorted, 1 - selection.es(l));
        const double want = v0 - discount * ReferenceTailMean(sorted, q);
        const double got = s.es(l).values(k);
        expect(near(got, want), absl::StrCat("ES ", selection.es(l)), j, got, want);
      }
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

// The shocks x[p, i] behind ST[p, i] of an explicit market:
// x = (log(ST / S0) - (r - s^2 / 2) T) / (s sqrt(T)), column-major P x N.
std::vector<double> Shocks(const PriceCall& call, const v1::PriceRequest& request) {
  const v1::ExplicitMarket& market = request.market().explicit_();
  const int64_t issuers = market.spot_size();
  const int64_t paths = request.paths();
  const std::vector<float> st = AssembleTerminalPrices(call, paths, issuers);
  const double t = request.maturity();
  std::vector<double> x(st.size());
  for (int64_t i = 0; i < issuers; ++i) {
    const double s = market.volatility(i);
    for (int64_t p = 0; p < paths; ++p) {
      x[i * paths + p] =
          (std::log(st[i * paths + p] / market.spot(i)) - (request.rate() - s * s / 2) * t) /
          (s * std::sqrt(t));
    }
  }
  return x;
}

double SampleCorrelation(const double* x, const double* y, int64_t n) {
  double mx = 0, my = 0;
  for (int64_t p = 0; p < n; ++p) {
    mx += x[p];
    my += y[p];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (int64_t p = 0; p < n; ++p) {
    sxy += (x[p] - mx) * (y[p] - my);
    sxx += (x[p] - mx) * (x[p] - mx);
    syy += (y[p] - my) * (y[p] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

// Two issuers with correlation 0.5: L = [[1, 0], [0.5, sqrt(0.75)]], so
// issuer 0 keeps its independent shock z0 and issuer 1 gets
// 0.5 z0 + sqrt(0.75) z1, with the same z as the uncorrelated request.
TEST(Price, CorrelatedShocksAreTheFactorTimesTheIndependentOnes) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const int64_t paths = 20'000;
  v1::PriceRequest request = SmallRequest(/*issuers=*/2, paths, /*columns=*/3);
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->mutable_statistics();
  const PriceCall independent = RunPrice(*stub, request);
  ASSERT_TRUE(independent.status.ok()) << independent.status.error_message();
  for (double c : {1.0, 0.5, 0.5, 1.0}) request.mutable_market()->add_correlation(c);
  const PriceCall correlated = RunPrice(*stub, request);
  ASSERT_TRUE(correlated.status.ok()) << correlated.status.error_message();
  ASSERT_TRUE(correlated.replies.back().has_finished());

  const std::vector<double> z = Shocks(independent, request);
  const std::vector<double> x = Shocks(correlated, request);
  ASSERT_EQ(x.size(), static_cast<size_t>(2 * paths));
  double worst0 = 0, worst1 = 0;
  for (int64_t p = 0; p < paths; ++p) {
    worst0 = std::max(worst0, std::abs(x[p] - z[p]));
    worst1 =
        std::max(worst1, std::abs(x[paths + p] - (0.5 * z[p] + std::sqrt(0.75) * z[paths + p])));
  }
  EXPECT_LT(worst0, 1e-4);
  EXPECT_LT(worst1, 1e-4);
  // Standard error of a sample correlation of 0.5 here: 0.75 / sqrt(P) ~ 0.005.
  EXPECT_NEAR(SampleCorrelation(x.data(), x.data() + paths, paths), 0.5, 0.03);
  EXPECT_NEAR(SampleCorrelation(z.data(), z.data() + paths, paths), 0.0, 0.03);
}

// Pair sums x[2k, i] + x[2k + 1, i] of the shocks, the largest in magnitude.
double WorstPairSum(const std::vector<double>& x, int64_t paths, int64_t issuers) {
  double worst = 0;
  for (int64_t i = 0; i < issuers; ++i) {
    for (int64_t p = 0; p + 1 < paths; p += 2) {
      worst = std::max(worst, std::abs(x[i * paths + p] + x[i * paths + p + 1]));
    }
  }
  return worst;
}

TEST(Price, AntitheticPathsNegateTheShocksOfTheirPartner) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const int64_t issuers = 5, paths = 1001;  // odd: the last path has no partner
  v1::PriceRequest request = SmallRequest(issuers, paths, /*columns=*/10);
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->mutable_statistics();
  const PriceCall plain = RunPrice(*stub, request);
  ASSERT_TRUE(plain.status.ok()) << plain.status.error_message();
  request.set_antithetic(true);
  const PriceCall antithetic = RunPrice(*stub, request);
  ASSERT_TRUE(antithetic.status.ok()) << antithetic.status.error_message();

  const std::vector<double> z = Shocks(plain, request);
  const std::vector<double> x = Shocks(antithetic, request);
  EXPECT_LT(WorstPairSum(x, paths, issuers), 1e-4);
  EXPECT_GT(WorstPairSum(z, paths, issuers), 1.0);  // without it, pairs are independent
  // Even paths, the last one included, keep the shocks of the plain request.
  double worst = 0;
  for (int64_t i = 0; i < issuers; ++i) {
    for (int64_t p = 0; p < paths; p += 2) {
      worst = std::max(worst, std::abs(x[i * paths + p] - z[i * paths + p]));
    }
  }
  EXPECT_LT(worst, 1e-5);

  // With a correlation too: x = L z is linear, so pairs still cancel.
  std::vector<double> c(issuers * issuers, 0.3);
  for (int64_t i = 0; i < issuers; ++i) c[i * issuers + i] = 1.0;
  request.mutable_market()->mutable_correlation()->Assign(c.begin(), c.end());
  const PriceCall both = RunPrice(*stub, request);
  ASSERT_TRUE(both.status.ok()) << both.status.error_message();
  const std::vector<double> y = Shocks(both, request);
  EXPECT_LT(WorstPairSum(y, paths, issuers), 1e-4);
  double moved = 0;  // issuer 1 now mixes in issuer 0's shocks
  for (int64_t p = 0; p < paths; ++p)
    moved = std::max(moved, std::abs(y[paths + p] - z[paths + p]));
  EXPECT_GT(moved, 0.1);
}

TEST(ListDevices, ReportsTheCpuDeviceAndItsAccounting) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const v1::ListDevicesReply before = ListDevices(*stub);
  ASSERT_EQ(before.devices_size(), 1);
  EXPECT_EQ(before.devices(0).name(), "cpu0");
  EXPECT_EQ(before.devices(0).kind(), "cpu");
  EXPECT_EQ(before.devices(0).memory_budget_bytes(), kTestBudgetBytes);
  EXPECT_EQ(before.devices(0).bytes_in_use(), 0);
  EXPECT_EQ(before.devices(0).peak_bytes(), 0);
  EXPECT_EQ(before.devices(0).shards_done(), 0);

  const int64_t issuers = 10, paths = 3000, columns = 500;
  const PriceCall call = RunPrice(*stub, SmallRequest(issuers, paths, columns));
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  const int64_t shards = Accepted(call).plan().shard_count();
  ASSERT_GE(shards, 1);

  const v1::ListDevicesReply after = ListDevices(*stub);
  ASSERT_EQ(after.devices_size(), 1);
  EXPECT_EQ(after.devices(0).shards_done(), before.devices(0).shards_done() + shards);
  EXPECT_EQ(after.devices(0).bytes_in_use(), 0);
  EXPECT_GE(after.devices(0).peak_bytes(), 4 * paths * issuers);  // at least ST
  EXPECT_LE(after.devices(0).peak_bytes(), kTestBudgetBytes);
  EXPECT_EQ(after.devices(0).memory_budget_bytes(), kTestBudgetBytes);
}

}  // namespace
}  // namespace pricer::testing
