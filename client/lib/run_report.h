// What `pricer price` tells the user about a run: the progress line on a
// terminal while it runs, and the summary at the end, as text or JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "client/lib/price_results.h"

namespace pricer {

// The floating-point operations of the columns this run priced: 2 P N each
// (the GEMM; JobFinished.flops counts the same way).
double RunFlops(const RunTotals& totals);

// The last line of the text summary, e.g.
//   priced 64670 columns (35330 more from the journal) x 500 paths x 4000
//   issuers in 2.000 s (server 1.900 s): 129.3 GFLOP/s
// then the device thread-seconds when the server reported them. GFLOP/s is
// of the columns priced by this run.
std::string SummaryText(const RunTotals& totals, double wall_seconds);

// The summary as one flat JSON object (README: `pricer price --json`):
// columns_priced, columns_from_journal, column_begin, column_end, paths,
// issuers, wall_seconds, server_seconds, flops, gflops_per_second, and the
// output files stats_out, full_out, prices_out (null when not asked for).
std::string SummaryJson(const RunTotals& totals, double wall_seconds, const ResultFiles& files);

// One progress line: `done` of `total` columns (those from the journal
// included), of which `priced` by this run in `seconds`, e.g.
//   " 42.0%  42000 / 100000 columns  8400 columns/s  ETA 7s"
std::string FormatProgress(int64_t done, int64_t total, int64_t priced, double seconds);

// Redraws the progress line in place on `out` (a terminal), at most every
// 100 ms, and ends it with a newline. Not thread-safe.
class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ProgressLine(std::FILE* out, Clock::time_point start = Clock::now())
      : out_(out), start_(start) {}
  // Whether Update() at `now` draws.
  bool Due(Clock::time_point now, int64_t done, int64_t total) const;
  void Update(int64_t done, int64_t total, int64_t priced, Clock::time_point now = Clock::now());
  // Ends the line, if one was drawn.
  void Finish();

 private:
  std::FILE* const out_;
  const Clock::time_point start_;
  bool drawn_ = false;
  Clock::time_point last_{};
};

}  // namespace pricer
