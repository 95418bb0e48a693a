// What the engine prices: a validated, gRPC-free description of one job.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/model/instruments.h"
#include "server/model/precision_target.h"
#include "server/model/statistics.h"

namespace pricer {

// The issuers and the model constants. spot and volatility have N entries.
struct Market {
  std::vector<double> spot;
  std::vector<double> volatility;
  double rate = 0.0;
  double maturity = 1.0;
  // Cholesky factor L of the shocks' correlation (N x N, column-major, lower),
  // from CholeskyFactor; empty for independent issuers.
  std::vector<float> correlation_factor;

  int64_t issuers() const { return static_cast<int64_t>(spot.size()); }
  bool correlated() const { return !correlation_factor.empty(); }
};

// The per-issuer float32 constants of TerminalPrice (gbm.h), computed in
// float64: spot S0, drift (r - sigma^2 / 2) T and diffusion sigma sqrt(T).
struct GbmConstants {
  std::vector<float> spot, drift, diffusion;
};
GbmConstants GbmConstantsOf(const Market& market);

// spot[i] ~ U(spot_min, spot_max), volatility[i] ~ U(volatility_min,
// volatility_max) from the counter-based generator, as in the original example.
struct MarketDraw {
  int64_t issuers = 0;
  uint64_t seed = 0;
  double spot_min = 0, spot_max = 0;
  double volatility_min = 0, volatility_max = 0;
};
std::vector<double> DrawSpots(const MarketDraw& draw);
std::vector<double> DrawVolatilities(const MarketDraw& draw);

// The scenario matrix A (N x M): either held inline, column-major, or drawn
// A[i, j] ~ U(value_min, value_max) block by block, never built whole.
class ScenarioMatrix {
 public:
  static ScenarioMatrix Inline(int64_t rows, int64_t columns,
                               std::shared_ptr<const std::vector<float>> values);
  static ScenarioMatrix Generated(int64_t rows, int64_t columns, uint64_t seed, float value_min,
                                  float value_max);
  // An inline matrix whose values come later (SetValues, by the job's
  // preparation: a stored set read from disk); its shape is final now.
  static ScenarioMatrix Deferred(int64_t rows, int64_t columns);

  int64_t rows() const { return rows_; }
  int64_t columns() const { return columns_; }
  bool generated() const { return generated_; }
  // The values of a deferred matrix (rows x columns, column-major).
  void SetValues(std::shared_ptr<const std::vector<float>> values) { values_ = std::move(values); }
  // An inline matrix's values (null for a generated one).
  const std::shared_ptr<const std::vector<float>>& shared_values() const { return values_; }

  // Writes columns [first, first + count) as a column-major rows x count block.
  void CopyColumns(int64_t first, int64_t count, float* out) const;

  // The rule of a generated matrix, for backends that draw it themselves
  // (A[i, j] = UniformAt(seed, kScenarios, j, i, value_min, value_max)).
  uint64_t seed() const { return seed_; }
  float value_min() const { return value_min_; }
  float value_max() const { return value_max_; }

 private:
  int64_t rows_ = 0;
  int64_t columns_ = 0;
  bool generated_ = false;
  std::shared_ptr<const std::vector<float>> values_;
  uint64_t seed_ = 0;
  float value_min_ = 0, value_max_ = 0;
};

struct OutputSelection {
  bool full = false;
  StatisticsSelection statistics = StatisticsSelection::Basic();  // none: !any()
  bool terminal_prices = false;
  bool instrument_values = false;  // V, of a job with instruments
  // Preferred columns per chunk; 0 lets the planner choose.
  int64_t chunk_columns = 0;
};

// The arithmetic a backend may use for the shard GEMMs. The cpu backend always
// computes in float32; the cuda backend uses the tensor cores when allowed.
enum class GemmPrecision {
  kFloat32,
  kTensorFloat32,  // inputs rounded to 10-bit mantissas, float32 accumulation
  kBFloat16,       // inputs rounded to 7-bit mantissas, float32 accumulation
};

struct JobSpec {
  Market market;
  int64_t paths = 0;
  uint64_t seed = 0;
  // Path 2k + 1 takes the negated shocks of path 2k (an odd last path has no
  // partner and keeps its own).
  bool antithetic = false;
  ScenarioMatrix scenarios;
  // The book (docs/risk.md, "Books"): K instruments on the issuers, whose
  // values at the horizon V (P x K) are what A's rows weigh; empty: A's rows
  // are the issuers' stocks and the GEMMs multiply ST.
  std::vector<Instrument> instruments;
  // Historical scenarios: the issuers' log-returns over the horizon R (P x N,
  // column-major, P = paths), and ST = S0 exp(R); unset: GBM from the seed.
  std::optional<ScenarioMatrix> returns;
  // Priced columns [column_begin, column_end) of A.
  int64_t column_begin = 0;
  int64_t column_end = 0;
  OutputSelection output;
  // Of a targeted request (the service runs its rounds, each a job at its
  // paths; the engine prices one job and ignores it).
  PrecisionTarget target;
  GemmPrecision precision = GemmPrecision::kFloat32;
  // Shard width override for tests and benchmarks; 0 lets the planner choose.
  int64_t shard_columns = 0;
  // Who asked: a client name (from the server's token file) or the peer's
  // address. Devices are shared round robin between clients first, then
  // between one client's jobs; per-client quotas count by it.
  std::string client;
  // Jobs with a higher priority get the devices first, whoever asked; equal
  // priorities are shared round robin between clients, then between jobs.
  int priority = 0;
  // When set, the job stops with DEADLINE_EXCEEDED at the next shard boundary
  // after this time.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // The work that turns the checked request into the job's inputs and is
  // too heavy for a gRPC thread: drawing a generated market, the Cholesky
  // factor of a correlation matrix, reading a stored scenario set. When set,
  // the engine runs it as the job's first task, on a device worker, before
  // any other task starts; its error ends the job. Every size is final
  // before it runs (N, P, M, whether the issuers are correlated, so the
  // planner can budget the job): it only fills in values, in place.
  std::function<absl::Status(JobSpec&)> prepare;
  // Set once the job is stopped (cancelled, failed, drained); with the
  // deadline, what long phases poll between blocks (StopStatus).
  std::shared_ptr<const std::atomic<bool>> stopped;

  // The rows of A and the columns of the GEMMs' left operand X: K with
  // instruments (X = V), else N (X = ST).
  int64_t position_rows() const {
    return instruments.empty() ? market.issuers() : static_cast<int64_t>(instruments.size());
  }
  bool historical() const { return returns.has_value(); }
};

// The float32 constants of TerminalPrice for `spec`: GbmConstantsOf its
// market, or for historical scenarios drift 0 and diffusion 1, so that
// TerminalPrice(S0, 0, 1, R) = S0 exp(R) with R in place of the shocks.
GbmConstants TerminalConstantsOf(const JobSpec& spec);

// X0, the values today of X's columns (float64): the spots, or the
// instruments' values today (InstrumentValuesToday). V0 = A^T X0.
std::vector<double> ValuesToday(const JobSpec& spec);

// Why a long phase of `spec`'s job should end now: CANCELLED when the job was
// stopped, DEADLINE_EXCEEDED when its deadline passed; OK to go on.
absl::Status StopStatus(const JobSpec& spec);

}  // namespace pricer
