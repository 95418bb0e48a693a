#include "server/model/job_spec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "server/model/counter_rng.h"
#include "server/model/uniform_rows.h"

namespace pricer {
namespace {

std::vector<double> DrawUniforms(const MarketDraw& draw, RandomStream stream, double low,
                                 double high) {
  std::vector<float> values(static_cast<size_t>(draw.issuers));
  UniformRow(draw.seed, stream, /*row=*/0, static_cast<uint32_t>(draw.issuers),
             static_cast<float>(low), static_cast<float>(high), values.data());
  return std::vector<double>(values.begin(), values.end());
}

}  // namespace

GbmConstants GbmConstantsOf(const Market& market) {
  const size_t n = static_cast<size_t>(market.issuers());
  GbmConstants c{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
  const double t = market.maturity;
  for (size_t i = 0; i < n; ++i) {
    const double sigma = market.volatility[i];
    c.spot[i] = static_cast<float>(market.spot[i]);
    c.drift[i] = static_cast<float>((market.rate - 0.5 * sigma * sigma) * t);
    c.diffusion[i] = static_cast<float>(sigma * std::sqrt(t));
  }
  return c;
}

GbmConstants TerminalConstantsOf(const JobSpec& spec) {
  GbmConstants c = GbmConstantsOf(spec.market);
  if (spec.historical()) {
    std::fill(c.drift.begin(), c.drift.end(), 0.0f);
    std::fill(c.diffusion.begin(), c.diffusion.end(), 1.0f);
  }
  return c;
}

std::vector<double> ValuesToday(const JobSpec& spec) {
  if (spec.instruments.empty()) return spec.market.spot;
  return InstrumentValuesToday(spec.market, spec.instruments);
}

std::vector<double> DrawSpots(const MarketDraw& draw) {
  return DrawUniforms(draw, RandomStream::kSpot, draw.spot_min, draw.spot_max);
}

std::vector<double> DrawVolatilities(const MarketDraw& draw) {
  return DrawUniforms(draw, RandomStream::kVolatility, draw.volatility_min, draw.volatility_max);
}

ScenarioMatrix ScenarioMatrix::Inline(int64_t rows, int64_t columns,
                                      std::shared_ptr<const std::vector<float>> values) {
  ScenarioMatrix m;
  m.rows_ = rows;
  m.columns_ = columns;
  m.values_ = std::move(values);
  return m;
}

ScenarioMatrix ScenarioMatrix::Generated(int64_t rows, int64_t columns, uint64_t seed,
                                         float value_min, float value_max) {
  ScenarioMatrix m;
  m.rows_ = rows;
  m.columns_ = columns;
  m.generated_ = true;
  m.seed_ = seed;
  m.value_min_ = value_min;
  m.value_max_ = value_max;
  return m;
}

ScenarioMatrix ScenarioMatrix::Deferred(int64_t rows, int64_t columns) {
  ScenarioMatrix m;
  m.rows_ = rows;
  m.columns_ = columns;
  return m;
}

absl::Status StopStatus(const JobSpec& spec) {
  if (spec.stopped != nullptr && spec.stopped->load(std::memory_order_relaxed)) {
    return absl::CancelledError("the job was stopped");
  }
  if (spec.deadline.has_value() && std::chrono::steady_clock::now() >= *spec.deadline) {
    return absl::DeadlineExceededError("the job's deadline passed");
  }
  return absl::OkStatus();
}

void ScenarioMatrix::CopyColumns(int64_t first, int64_t count, float* out) const {
  const size_t rows = static_cast<size_t>(rows_);
  if (!generated_) {
    std::memcpy(out, values_->data() + static_cast<size_t>(first) * rows,
                static_cast<size_t>(count) * rows * sizeof(float));
    return;
  }
  for (int64_t j = 0; j < count; ++j) {
    UniformRowOnHost(seed_, RandomStream::kScenarios, static_cast<uint64_t>(first + j),
                     static_cast<uint32_t>(rows_), value_min_, value_max_, out + j * rows);
  }
}

}  // namespace pricer
