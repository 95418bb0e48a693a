// Books and historical scenarios with the real cpu backend (docs/risk.md,
// "Books"): a stock-only book is today's request bit for bit; options at the
// horizon are their payoffs on every path; put-call parity on every path;
// discounted values are martingales (their Monte Carlo mean is Black-Scholes
// today); historical returns give ST = S0 exp(R) and SC = ST A; statistics
// compose, and nothing depends on shard width or devices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/scheduler/engine.h"
#include "tests/backends/cpu/cpu_engine_test_util.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {
namespace {

constexpr double kRate = 0.03, kMaturity = 1.0;

Market BookMarket() { return MakeMarket({8, 10, 12}, {0.2, 0.35, 0.5}, kRate, kMaturity); }

Instrument Option(int64_t issuer, InstrumentType type, double strike, double expiry) {
  return Instrument{issuer, type, strike, expiry, std::nullopt};
}

// The identity as A (K x K): SC's columns are V's.
ScenarioMatrix Identity(int64_t k) {
  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(k * k), 0.0f);
  for (int64_t i = 0; i < k; ++i) (*values)[static_cast<size_t>(i * k + i)] = 1.0f;
  return ScenarioMatrix::Inline(k, k, std::move(values));
}

JobSpec BookSpec(std::vector<Instrument> book, int64_t paths, bool statistics = false) {
  const auto k = static_cast<int64_t>(book.size());
  JobSpec spec = MakeSpec(BookMarket(), paths, kSeed, Identity(k), Output(true, statistics, true));
  spec.instruments = std::move(book);
  return spec;
}

// Black-Scholes in the erf form, the test's own.
double BlackScholes(bool call, double s, double k, double sigma, double tau) {
  const double w = sigma * std::sqrt(tau), df = std::exp(-kRate * tau);
  const double d1 = (std::log(s / k) + kRate * tau) / w + w / 2, d2 = d1 - w;
  auto phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  return call ? s * phi(d1) - k * df * phi(d2) : k * df * phi(-d2) - s * phi(-d1);
}

TEST(CpuEngineBookTest, AStockOnlyBookIsTodaysRequestBitForBit) {
  auto engine = MakeEngine();
  OutputSelection output = Output(true, true, true);
  output.statistics.var = {0.99};
  output.statistics.es = {0.975};
  output.statistics.errors = true;
  JobSpec plain =
      MakeSpec(SpreadMarket(kIssuers), 700, kSeed,
               ScenarioMatrix::Generated(kIssuers, 300, kScenarioSeed, -1.0f, 1.0f), output);
  JobSpec book = plain;
  for (int64_t i = 0; i < kIssuers; ++i) {
    book.instruments.push_back(Option(i, InstrumentType::kStock, 0, 0));
  }
  const JobResult a = RunJob(*engine, plain), b = RunJob(*engine, book);
  ASSERT_TRUE(a.status.ok()) << a.status;
  ASSERT_TRUE(b.status.ok()) << b.status;
  EXPECT_EQ(a.sc, b.sc);
  EXPECT_EQ(a.st, b.st);
  EXPECT_EQ(a.statistics.v0, b.statistics.v0);
  EXPECT_EQ(a.statistics.mean, b.statistics.mean);
  EXPECT_EQ(a.statistics.var, b.statistics.var);
  EXPECT_EQ(a.statistics.es, b.statistics.es);
  EXPECT_EQ(a.statistics.es_se, b.statistics.es_se);
}

TEST(CpuEngineBookTest, OptionsExpiringAtTheHorizonAreTheirPayoffsOnEveryPath) {
  auto engine = MakeEngine();
  const std::vector<double> strikes = {8, 9.5, 13};
  std::vector<Instrument> book;
  for (int64_t i = 0; i < 3; ++i) {
    book.push_back(Option(i, InstrumentType::kCall, strikes[i], kMaturity));
    book.push_back(Option(i, InstrumentType::kPut, strikes[i], kMaturity));
  }
  JobSpec spec = BookSpec(book, 2000);
  spec.output.instrument_values = true;
  const JobResult r = RunJob(*engine, spec);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.v, r.sc);  // A is the identity: SC is V, which the job also sent
  for (int64_t k = 0; k < 6; ++k) {
    const int64_t i = k / 2;
    for (int64_t p = 0; p < r.paths; ++p) {
      const double s = r.St(p, i), strike = strikes[static_cast<size_t>(i)];
      const double payoff = k % 2 == 0 ? std::max(s - strike, 0.0) : std::max(strike - s, 0.0);
      ASSERT_EQ(r.Sc(p, k), static_cast<float>(payoff)) << "instrument " << k << " path " << p;
    }
  }
}

TEST(CpuEngineBookTest, PutCallParityHoldsOnEveryPath) {
  auto engine = MakeEngine();
  const std::vector<Instrument> book = {Option(1, InstrumentType::kCall, 10.5, 2.5),
                                        Option(1, InstrumentType::kPut, 10.5, 2.5),
                                        Option(1, InstrumentType::kForward, 10.5, 2.5)};
  const JobResult r = RunJob(*engine, BookSpec(book, 3000));
  ASSERT_TRUE(r.status.ok()) << r.status;
  const double discounted_strike = 10.5 * std::exp(-kRate * 1.5);
  for (int64_t p = 0; p < r.paths; ++p) {
    const double call = r.Sc(p, 0), put = r.Sc(p, 1), forward = r.Sc(p, 2);
    // Each is float32-rounded: 2^-24 of each, and the forward's own.
    const double tolerance = 2 * kFloatEpsilon * (call + put + std::abs(forward) + r.St(p, 1));
    ASSERT_NEAR(call - put, forward, tolerance) << "path " << p;
    ASSERT_NEAR(forward, r.St(p, 1) - discounted_strike, tolerance) << "path " << p;
  }
}

TEST(CpuEngineBookTest, DiscountedValuesAverageToBlackScholesToday) {
  auto engine = MakeEngine();
  std::vector<Instrument> book;
  for (int64_t i = 0; i < 3; ++i) {
    const double spot = BookMarket().spot[static_cast<size_t>(i)];
    book.push_back(Option(i, InstrumentType::kCall, spot * 1.1, 3.0));
    book.push_back(Option(i, InstrumentType::kPut, spot * 0.9, 2.0));
  }
  book.push_back(Option(2, InstrumentType::kForward, 11, 4.0));
  JobSpec spec = BookSpec(book, 20000, true);
  const JobResult r = RunJob(*engine, spec);
  ASSERT_TRUE(r.status.ok()) << r.status;
  const Market market = BookMarket();
  const double discount = std::exp(-kRate * kMaturity);
  std::vector<double> today;
  for (const Instrument& b : book) {
    const double s = market.spot[static_cast<size_t>(b.issuer)];
    const double sigma = market.volatility[static_cast<size_t>(b.issuer)];
    today.push_back(
        b.type == InstrumentType::kForward
            ? s - b.strike * std::exp(-kRate * b.expiry)
            : BlackScholes(b.type == InstrumentType::kCall, s, b.strike, sigma, b.expiry));
  }
  for (size_t k = 0; k < book.size(); ++k) {
    SCOPED_TRACE("instrument " + std::to_string(k));
    EXPECT_NEAR(r.statistics.v0[k], today[k], 1e-12 * today[k] + 1e-12);
    double sum = 0, squares = 0;
    for (int64_t p = 0; p < r.paths; ++p) {
      const double x = discount * r.Sc(p, static_cast<int64_t>(k));
      sum += x;
      squares += x * x;
    }
    const double mean = sum / r.paths;
    const double error = std::sqrt((squares / r.paths - mean * mean) / (r.paths - 1));
    EXPECT_NEAR(mean, today[k], 3 * error) << "standard error " << error;
  }
  // With the identity as A, V0 is X0: the server's, checked above to 1e-12,
  // so that the statistics' check is exact in V0.
  ExpectStatisticsOfFullResult(r, spec, r.statistics.v0);
}

TEST(CpuEngineBookTest, TheMomentsShortcutTakesTheBooksCovariance) {
  auto engine = MakeEngine();
  std::vector<Instrument> book;
  for (int64_t i = 0; i < 3; ++i) {
    book.push_back(Option(i, InstrumentType::kCall, 10, 2.0));
    book.push_back(Option(i, InstrumentType::kPut, 9, 1.5));
  }
  auto run = [&](bool shortcut) {
    JobSpec spec = MakeSpec(BookMarket(), 4000, kSeed,
                            ScenarioMatrix::Generated(6, 300, kScenarioSeed, -1.0f, 1.0f),
                            Output(false, true, false));
    spec.output.statistics.min = spec.output.statistics.max = false;
    spec.output.statistics.from_covariance = shortcut;
    spec.instruments = book;
    return RunJob(*engine, spec);
  };
  const JobResult shortcut = run(true), gemm = run(false);
  ASSERT_TRUE(shortcut.status.ok()) << shortcut.status;
  ASSERT_TRUE(gemm.status.ok()) << gemm.status;
  for (size_t j = 0; j < 300; ++j) {
    EXPECT_EQ(shortcut.statistics.v0[j], gemm.statistics.v0[j]);
    // The GEMM path rounds SC to float32: 1e-6 of the scale of the column.
    const double scale = gemm.statistics.stddev[j] + std::abs(gemm.statistics.mean[j]);
    EXPECT_NEAR(shortcut.statistics.mean[j], gemm.statistics.mean[j], 1e-6 * scale) << j;
    EXPECT_NEAR(shortcut.statistics.stddev[j], gemm.statistics.stddev[j], 1e-5 * scale) << j;
  }
}

// V is resident beside ST and the planner counts it: 3 MB holds ST (24 KB)
// and a 256-column shard (2.3 MB) but not V (2.4 MB) too, so the book's job
// is refused naming V while the job without the book is priced; with 5 MB
// the book is priced and its peak holds V.
TEST(CpuEngineBookTest, ThePlannerCountsTheBooksValues) {
  auto book_spec = [](bool book) {
    const int64_t rows = book ? 300 : 3;
    JobSpec spec = MakeSpec(BookMarket(), 2000, kSeed,
                            ScenarioMatrix::Generated(rows, 512, kScenarioSeed, 0.0f, 1.0f),
                            Output(false, true, false), kColumnAlignment);
    if (book) spec.instruments.assign(300, Option(1, InstrumentType::kCall, 10, 2.0));
    return spec;
  };
  auto tight = MakeEngine(3 << 20, 1, 1);
  const absl::StatusOr<std::shared_ptr<Job>> refused = tight->Submit(book_spec(true));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("instrument values for 300 instruments"),
            std::string::npos)
      << refused.status();
  const JobResult plain = RunJob(*tight, book_spec(false));
  ASSERT_TRUE(plain.status.ok()) << plain.status;

  auto roomy = MakeEngine(5 << 20, 1, 1);
  const JobResult priced = RunJob(*roomy, book_spec(true));
  ASSERT_TRUE(priced.status.ok()) << priced.status;
  const int64_t v_bytes = int64_t{2000} * 300 * 4;
  EXPECT_GE(roomy->DeviceStatuses()[0].peak_bytes, v_bytes);
  EXPECT_LE(roomy->DeviceStatuses()[0].peak_bytes, 5 << 20);
}

// R (P x N) of a few percent, from a fixed LCG.
std::shared_ptr<std::vector<float>> Returns(int64_t paths, int64_t issuers) {
  auto r = std::make_shared<std::vector<float>>(static_cast<size_t>(paths * issuers));
  uint64_t state = 12345;
  for (float& x : *r) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = 0.6f * (static_cast<float>(state >> 40) / static_cast<float>(1 << 24) - 0.5f);
  }
  return r;
}

JobSpec HistoricalSpec(int64_t shard_columns, std::vector<Instrument> book = {}) {
  constexpr int64_t kScenarios = 900;
  OutputSelection output = Output(true, true, true);
  output.statistics.var = {0.99};
  output.statistics.es = {0.975};
  const auto rows = book.empty() ? kIssuers : static_cast<int64_t>(book.size());
  JobSpec spec = MakeSpec(SpreadMarket(kIssuers), kScenarios, 0,
                          ScenarioMatrix::Generated(rows, 600, kScenarioSeed, -1.0f, 1.0f), output,
                          shard_columns);
  spec.returns = ScenarioMatrix::Inline(kScenarios, kIssuers, Returns(kScenarios, kIssuers));
  spec.instruments = std::move(book);
  return spec;
}

TEST(CpuEngineBookTest, HistoricalReturnsGiveTheProductOfS0ExpR) {
  auto engine = MakeEngine();
  const JobSpec spec = HistoricalSpec(0);
  const JobResult r = RunJob(*engine, spec);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.paths, 900);
  const std::vector<float>& returns = *spec.returns->shared_values();
  for (int64_t i = 0; i < kIssuers; ++i) {
    for (int64_t p = 0; p < r.paths; ++p) {
      const double expected =
          spec.market.spot[static_cast<size_t>(i)] *
          std::exp(static_cast<double>(returns[static_cast<size_t>(i * 900 + p)]));
      ASSERT_NEAR(r.St(p, i), expected, 4 * kFloatEpsilon * expected) << i << ", " << p;
    }
  }
  ExpectProductMatches(r, ReferenceScenarios(kScenarioSeed, kIssuers, 600, -1, 1), kIssuers);
  ExpectStatisticsOfFullResult(r, spec);
}

TEST(CpuEngineBookTest, BooksOnHistoricalScenariosDoNotDependOnShardWidthOrDevices) {
  std::vector<Instrument> book;
  for (int64_t i = 0; i < kIssuers; i += 3) {
    book.push_back(Option(i, InstrumentType::kCall, 7.5, 1.5));
    book.push_back(Option(i + 1, InstrumentType::kPut, 8, 2));
  }
  auto one = MakeEngine();
  auto two = MakeEngine(kBudget, 2, 1);
  const JobResult base = RunJob(*one, HistoricalSpec(0, book));
  ASSERT_TRUE(base.status.ok()) << base.status;
  for (const auto& [what, result] :
       {std::pair{"256-column shards", RunJob(*one, HistoricalSpec(256, book))},
        std::pair{"two devices", RunJob(*two, HistoricalSpec(256, book))}}) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(result.status.ok()) << result.status;
    EXPECT_EQ(result.sc, base.sc);
    EXPECT_EQ(result.statistics.v0, base.statistics.v0);
    EXPECT_EQ(result.statistics.var, base.statistics.var);
    EXPECT_EQ(result.statistics.es, base.statistics.es);
  }
}

}  // namespace
}  // namespace pricer
