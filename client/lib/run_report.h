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
// (the GEMM; JobFinished.flops counts the same way), every round of a
// targeted column counted.
double RunFlops(const RunTotals& totals);

// The last line of the text summary, e.g.
//   priced 64670 columns (35330 more from the journal) x 500 paths x 4000
//   issuers in 2.000 s (server 1.900 s): 129.3 GFLOP/s
// then the device thread-seconds when the server reported them, and with a
// precision target TargetLine. GFLOP/s is of the columns priced by this run.
std::string SummaryText(const RunTotals& totals, double wall_seconds);

// What a precision target did, over all the run's columns, e.g.
//   target var_0.99 <= 2%: 1,987 of 2,000 columns met it; paths 10,000 x
//   1,612, 20,000 x 350, 40,000 x 38
std::string TargetLine(const RunTotals& totals);

// The summary as one flat JSON object (README: `pricer price --json`):
// columns_priced, columns_from_journal, column_begin, column_end, paths,
// issuers, wall_seconds, server_seconds, gemm_thread_seconds and
// statistics_thread_seconds (the devices' split), flops, gflops_per_second, and the
// output files stats_out, full_out, prices_out, values_out (null when not asked for);
// with a precision target (else null) target ("var_0.99 <= 2%"),
// columns_met_target and columns_by_paths ("10000:1612,20000:350": paths,
// then columns, a string so that the object stays flat).
std::string SummaryJson(const RunTotals& totals, double wall_seconds, const ResultFiles& files);

// One progress line: `done` of `total` columns (those from the journal
// included), of which `priced` by this run in `seconds`, and the round of a
// targeted request (-1: none), e.g.
//   " 42.0%  42000 / 100000 columns  8400 columns/s  ETA 7s  round 1: 20000 paths"
std::string FormatProgress(int64_t done, int64_t total, int64_t priced, double seconds,
                           int round = -1, int64_t round_paths = 0);

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
  // The round the next lines name (RoundStarted; -1: none).
  void SetRound(int round, int64_t paths) {
    round_ = round;
    round_paths_ = paths;
  }
  // Ends the line, if one was drawn.
  void Finish();

 private:
  std::FILE* const out_;
  const Clock::time_point start_;
  bool drawn_ = false;
  Clock::time_point last_{};
  int round_ = -1;
  int64_t round_paths_ = 0;
};

}  // namespace pricer
