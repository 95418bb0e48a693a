// Euler contributions with the real cpu backend (docs/risk.md, "Where the
// risk comes from"): against a float64 recomputation from the job's own SC
// and ST (the band's paths from SC sorted, the mean from X), ES's add up to
// ES, a one-issuer portfolio's contribution is its ES, VaR's add up to their
// window's mean loss; with books and historical returns; and the same bits
// whatever the shard width and device count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "server/model/job_spec.h"
#include "server/scheduler/engine.h"
#include "tests/backends/cpu/cpu_engine_test_util.h"
#include "tests/backends/cpu/engine_test_util.h"

namespace pricer {
namespace {

constexpr double kEs = 0.975, kVar = 0.99;

// A job of `paths` on SpreadMarket(issuers) over A with full output, ST and
// ES and VaR with their contributions (and errors).
JobSpec AttributionSpec(int64_t issuers, int64_t paths, ScenarioMatrix a, bool errors = true) {
  JobSpec spec =
      MakeSpec(SpreadMarket(issuers), paths, kSeed, std::move(a), Output(true, true, true));
  StatisticsSelection& s = spec.output.statistics;
  s.es = {0.9, kEs};
  s.var = {kVar};
  s.es_contributions = {kEs};
  s.var_contributions = {kVar};
  s.errors = errors;
  return spec;
}

// The test's own bands: ranks of ES's k = floor((P - 1)(1 - a)) + 1 smallest
// and of VaR's window low - w .. low + 1 + w, w = floor(sqrt(P) / 2).
struct Ranks {
  int64_t first, last;
};
Ranks EsRanks(double level, int64_t paths) {
  return {0, static_cast<int64_t>(std::floor((paths - 1) * (1.0 - level)))};
}
Ranks VarRanks(double level, int64_t paths) {
  const auto low = static_cast<int64_t>(std::floor((paths - 1) * (1.0 - level)));
  const auto w = static_cast<int64_t>(std::floor(std::sqrt(static_cast<double>(paths)) / 2));
  return {std::max<int64_t>(0, low - w), std::min(paths - 1, low + 1 + w)};
}

// Column j's contributions recomputed in float64: the paths of `ranks` in
// SC[:, j] sorted by value (ties by path), X's mean over them.
struct Reference {
  std::vector<double> c, se, scale;  // scale: |A| (e^-rT mean |X| + |X0|), for tolerances
  double loss = 0;                   // the band's mean loss from SC
};
Reference Recompute(const JobResult& r, const std::vector<float>& x, const Dense& a,
                    const std::vector<double>& today, double discount, Ranks ranks, int64_t j) {
  const auto rows = static_cast<int64_t>(today.size());
  std::vector<int64_t> order(static_cast<size_t>(r.paths));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t p, int64_t q) { return r.Sc(p, j) < r.Sc(q, j); });
  std::vector<int64_t> band(order.begin() + ranks.first, order.begin() + ranks.last + 1);
  std::sort(band.begin(), band.end());
  const auto n = static_cast<double>(band.size());
  Reference ref;
  double v0 = 0, sc = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0, squares = 0;
    for (int64_t p : band) {
      const double v = x[static_cast<size_t>(i * r.paths + p)];
      sum += v;
      squares += v * v;
    }
    const double w = a[static_cast<size_t>(j * rows + i)], mean = sum / n;
    ref.c.push_back(-w * (discount * mean - today[static_cast<size_t>(i)]));
    ref.se.push_back(std::abs(w) * discount * std::sqrt((squares - sum * mean) / (n - 1) / n));
    ref.scale.push_back(std::abs(w) * (discount * mean + std::abs(today[static_cast<size_t>(i)])));
    v0 += w * today[static_cast<size_t>(i)];
  }
  for (int64_t p : band) sc += r.Sc(p, j);
  ref.loss = v0 - discount * sc / n;
  return ref;
}

// Every column's contributions of `r` (levels kEs then kVar) against
// Recompute, and their sums against ES and the window's loss.
void ExpectContributions(const JobResult& r, const JobSpec& spec, const std::vector<float>& x,
                         const Dense& a, const std::vector<double>& today) {
  const auto rows = static_cast<int64_t>(today.size());
  const double discount = std::exp(-spec.market.rate * spec.market.maturity);
  const ColumnStatistics& s = r.statistics;
  ASSERT_EQ(s.contributions.size(), 2u);
  for (int64_t j = r.column_begin; j < r.column_end; ++j) {
    const int64_t k = j - r.column_begin;
    for (size_t l = 0; l < 2; ++l) {
      SCOPED_TRACE("column " + std::to_string(j) + (l == 0 ? " es" : " var"));
      const Ranks ranks = l == 0 ? EsRanks(kEs, r.paths) : VarRanks(kVar, r.paths);
      const Reference ref = Recompute(r, x, a, today, discount, ranks, j);
      double sum = 0, scale = 0;
      for (int64_t i = 0; i < rows; ++i) {
        const auto at = static_cast<size_t>(k * rows + i);
        const double c = s.contributions[l][at];
        // The float64 mean rounded to float32 once, in either order of sums.
        ASSERT_NEAR(c, ref.c[static_cast<size_t>(i)], 1e-6 * ref.scale[static_cast<size_t>(i)])
            << "row " << i;
        if (!s.contributions_se.empty()) {
          ASSERT_NEAR(s.contributions_se[l][at], ref.se[static_cast<size_t>(i)],
                      1e-5 * ref.se[static_cast<size_t>(i)] + 1e-30)
              << "row " << i;
        }
        sum += c;
        scale += ref.scale[static_cast<size_t>(i)];
      }
      // SC's float32 products (K terms) against the float64 sums.
      const double tolerance = 2.0 * (static_cast<double>(rows) + 2) * kFloatEpsilon * scale;
      EXPECT_NEAR(sum, ref.loss, tolerance);
      if (l == 0) {
        EXPECT_NEAR(sum, s.es[1][static_cast<size_t>(k)], tolerance);
      }
    }
  }
}

std::vector<double> Spots(const JobSpec& spec) { return spec.market.spot; }

TEST(CpuEngineAttributionTest, ContributionsMatchAFloat64RecomputationFromScAndSt) {
  auto engine = MakeEngine();
  const JobSpec spec = AttributionSpec(
      kIssuers, 2000, ScenarioMatrix::Generated(kIssuers, 300, kScenarioSeed, -1.0f, 1.0f));
  const JobResult r = RunJob(*engine, spec);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ExpectContributions(r, spec, r.st, ReferenceScenarios(kScenarioSeed, kIssuers, 300, -1.0, 1.0),
                      Spots(spec));
  ExpectStatisticsOfFullResult(r, spec);
}

// A portfolio of one issuer: its ES is all that issuer's, the others' 0.
TEST(CpuEngineAttributionTest, AOneIssuerPortfolioContributesItsWholeEs) {
  auto engine = MakeEngine();
  constexpr int64_t kColumns = 10;
  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(kIssuers * kColumns));
  for (int64_t j = 0; j < kColumns; ++j) {
    (*values)[static_cast<size_t>(j * kIssuers + j * 3)] = j % 2 == 0 ? 2.5f : -1.0f;
  }
  const JobSpec spec =
      AttributionSpec(kIssuers, 4000, ScenarioMatrix::Inline(kIssuers, kColumns, values), false);
  const JobResult r = RunJob(*engine, spec);
  ASSERT_TRUE(r.status.ok()) << r.status;
  for (int64_t j = 0; j < kColumns; ++j) {
    for (int64_t i = 0; i < kIssuers; ++i) {
      const double c = r.statistics.contributions[0][static_cast<size_t>(j * kIssuers + i)];
      if (i != j * 3) {
        ASSERT_EQ(c, 0.0) << "column " << j << " issuer " << i;
        continue;
      }
      const double es = r.statistics.es[1][static_cast<size_t>(j)];
      EXPECT_NEAR(
          c, es,
          4 * kFloatEpsilon * (std::abs(es) + std::abs(r.statistics.v0[static_cast<size_t>(j)])))
          << j;
    }
  }
}

TEST(CpuEngineAttributionTest, BooksAndHistoricalReturnsAttributeTheirRows) {
  auto engine = MakeEngine();
  constexpr int64_t kPaths = 1500, kBookIssuers = 6, kColumns = 40;
  // A book of calls, puts and stocks: A's rows are the instruments, X is V.
  JobSpec book = AttributionSpec(
      kBookIssuers, kPaths, ScenarioMatrix::Generated(12, kColumns, kScenarioSeed, -1.0f, 1.0f));
  for (int64_t i = 0; i < kBookIssuers; ++i) {
    const double spot = book.market.spot[static_cast<size_t>(i)];
    book.instruments.push_back({i, InstrumentType::kCall, spot * 1.05, 2.0, std::nullopt});
    book.instruments.push_back({i, InstrumentType::kPut, spot * 0.9, 1.5, std::nullopt});
  }
  book.output.instrument_values = true;
  const JobResult b = RunJob(*engine, book);
  ASSERT_TRUE(b.status.ok()) << b.status;
  ExpectContributions(b, book, b.v, ReferenceScenarios(kScenarioSeed, 12, kColumns, -1.0, 1.0),
                      ValuesToday(book));

  // Historical returns: ST = S0 exp(R), and X is ST.
  JobSpec history = AttributionSpec(
      kBookIssuers, kPaths,
      ScenarioMatrix::Generated(kBookIssuers, kColumns, kScenarioSeed, -1.0f, 1.0f));
  auto returns = std::make_shared<std::vector<float>>(static_cast<size_t>(kPaths * kBookIssuers));
  for (size_t n = 0; n < returns->size(); ++n) {
    (*returns)[n] = 0.3f * std::sin(0.37f * static_cast<float>(n * n % 1013));
  }
  history.returns = ScenarioMatrix::Inline(kPaths, kBookIssuers, returns);
  const JobResult h = RunJob(*engine, history);
  ASSERT_TRUE(h.status.ok()) << h.status;
  ExpectContributions(h, history, h.st,
                      ReferenceScenarios(kScenarioSeed, kBookIssuers, kColumns, -1.0, 1.0),
                      Spots(history));
}

TEST(CpuEngineAttributionTest, TheSameBitsWhateverTheShardWidthAndDevices) {
  auto run = [](int64_t shard_columns, int devices) {
    auto engine = MakeEngine(kBudget, devices);
    JobSpec spec = AttributionSpec(
        kIssuers, 1200, ScenarioMatrix::Generated(kIssuers, 700, kScenarioSeed, -1.0f, 1.0f));
    spec.shard_columns = shard_columns;
    spec.column_begin = 100;
    return RunJob(*engine, spec);
  };
  const JobResult one = run(kColumnAlignment, 1), other = run(3 * kColumnAlignment, 2);
  ASSERT_TRUE(one.status.ok()) << one.status;
  ASSERT_TRUE(other.status.ok()) << other.status;
  EXPECT_EQ(one.statistics.contributions, other.statistics.contributions);
  EXPECT_EQ(one.statistics.contributions_se, other.statistics.contributions_se);
}

// Sensitivities (docs/risk.md): of a book of stocks, delta S0 is the
// contribution (Euler's theorem for a measure homogeneous in the spots).
TEST(CpuEngineAttributionTest, DeltaTimesSpotIsTheContributionOfAStockBook) {
  auto engine = MakeEngine();
  JobSpec spec = AttributionSpec(
      kIssuers, 2000, ScenarioMatrix::Generated(kIssuers, 200, kScenarioSeed, -1.0f, 1.0f));
  spec.output.statistics.delta = true;
  const JobResult r = RunJob(*engine, spec);
  ASSERT_TRUE(r.status.ok()) << r.status;
  const ColumnStatistics& s = r.statistics;
  ASSERT_EQ(s.delta.size(), 2u);
  for (size_t l = 0; l < 2; ++l) {
    for (size_t n = 0; n < s.delta[l].size(); ++n) {
      const double spot = spec.market.spot[n % kIssuers];
      const double c = s.contributions[l][n];
      ASSERT_NEAR(s.delta[l][n] * spot, c, 4 * kFloatEpsilon * (std::abs(c) + spot)) << n;
      if (!s.delta_se.empty()) {
        // (Both are 0 up to cancellation for an issuer of volatility 0.)
        ASSERT_NEAR(s.delta_se[l][n] * spot, s.contributions_se[l][n],
                    1e-5 * s.contributions_se[l][n] + 1e-8 * spot);
      }
    }
  }
}

// Central differences of ES and VaR's window loss, from the same request
// with S0[i] or sigma[i] moved by h either way (the same shocks), against
// the pathwise delta and vega of issuer i: within 3 standard errors and the
// float32 rounding of the two prices. With options, issuers whose volatility
// is above h (SpreadMarket's issuer 0 has none, and an option's value is
// not smooth in its volatility at 0).
void ExpectBumpsAgree(const JobSpec& spec, std::vector<int64_t> issuers) {
  auto engine = MakeEngine();
  const JobResult r = RunJob(*engine, spec);
  ASSERT_TRUE(r.status.ok()) << r.status;
  const int64_t n = spec.market.issuers(), columns = r.column_end - r.column_begin;
  for (const int64_t i : issuers) {
    for (const bool vega : {false, true}) {
      const double h = vega ? 1e-3 : 1e-3 * spec.market.spot[static_cast<size_t>(i)];
      JobSpec up = spec, down = spec;
      (vega ? up.market.volatility : up.market.spot)[static_cast<size_t>(i)] += h;
      (vega ? down.market.volatility : down.market.spot)[static_cast<size_t>(i)] -= h;
      const JobResult u = RunJob(*engine, up), d = RunJob(*engine, down);
      ASSERT_TRUE(u.status.ok() && d.status.ok());
      for (int64_t j = 0; j < columns; ++j) {
        const auto at = static_cast<size_t>(j * n + i);
        const double es = (u.statistics.es[1][j] - d.statistics.es[1][j]) / (2 * h);
        const double got = (vega ? r.statistics.vega : r.statistics.delta)[0][at];
        const double se = (vega ? r.statistics.vega_se : r.statistics.delta_se)[0][at];
        const double rounding = 8 * kFloatEpsilon * std::abs(r.statistics.v0[j]) / h + 1e-9;
        EXPECT_NEAR(got, es, 3 * se + rounding)
            << (vega ? "vega" : "delta") << " issuer " << i << " column " << j;
      }
    }
  }
}

TEST(CpuEngineAttributionTest, SensitivitiesMatchABumpAndReprice) {
  JobSpec spec =
      AttributionSpec(6, 4000, ScenarioMatrix::Generated(6, 30, kScenarioSeed, -1.0f, 1.0f));
  spec.output.statistics.delta = spec.output.statistics.vega = true;
  spec.output.full = spec.output.terminal_prices = false;
  ExpectBumpsAgree(spec, {0, 4});
}

TEST(CpuEngineAttributionTest, ABooksSensitivitiesMatchABumpAndReprice) {
  JobSpec spec =
      AttributionSpec(4, 4000, ScenarioMatrix::Generated(9, 30, kScenarioSeed, -1.0f, 1.0f));
  for (int64_t i = 0; i < 4; ++i) {
    const double spot = spec.market.spot[static_cast<size_t>(i)];
    spec.instruments.push_back({i, InstrumentType::kCall, spot * 1.05, 2.0, std::nullopt});
    spec.instruments.push_back({i, InstrumentType::kPut, spot * 0.95, 1.5, std::nullopt});
  }
  // Its own volatility: its vega comes only through ST.
  spec.instruments.push_back({2, InstrumentType::kCall, 7.0, 3.0, 0.4});
  spec.output.statistics.delta = spec.output.statistics.vega = true;
  spec.output.full = spec.output.terminal_prices = false;
  ExpectBumpsAgree(spec, {1, 2});
  // On historical returns: ST = S0 exp(R), and the volatilities move only
  // the options' own revaluation.
  auto returns = std::make_shared<std::vector<float>>(static_cast<size_t>(4000 * 4));
  for (size_t n = 0; n < returns->size(); ++n) {
    (*returns)[n] = 0.25f * std::sin(0.61f * static_cast<float>(n * n % 997));
  }
  spec.returns = ScenarioMatrix::Inline(4000, 4, returns);
  ExpectBumpsAgree(spec, {1, 2});
}

}  // namespace
}  // namespace pricer
