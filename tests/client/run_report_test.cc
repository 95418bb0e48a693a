#include "client/lib/run_report.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

RunTotals Resumed() {
  RunTotals totals;
  totals.column_begin = 0;
  totals.column_end = 100000;
  totals.columns_priced = 64670;
  totals.columns_from_journal = 35330;
  totals.paths = 500;
  totals.issuers = 4000;
  totals.server_seconds = 1.9;
  totals.path_columns = 500 * 64670;
  return totals;
}

TEST(SummaryText, SaysWhatThisRunPricedAndWhatCameFromTheJournal) {
  // 2 x 500 x 4000 x 64670 flops in 2 s: 129.34 GFLOP/s, not the 200 of
  // all 100,000 columns.
  EXPECT_EQ(SummaryText(Resumed(), 2.0),
            "priced 64670 columns (35330 more from the journal) x 500 paths x 4000 issuers in "
            "2.000 s (server 1.900 s): 129.3 GFLOP/s\n");
  RunTotals whole = Resumed();
  whole.columns_priced = 100000;
  whole.columns_from_journal = 0;
  whole.path_columns = 500 * 100000;
  whole.gemm_seconds = 3.5;
  whole.statistics_seconds = 0.25;
  EXPECT_EQ(SummaryText(whole, 2.0),
            "priced 100000 columns x 500 paths x 4000 issuers in 2.000 s (server 1.900 s): "
            "200.0 GFLOP/s\ndevice thread-seconds: GEMM 3.500, statistics 0.250\n");
}

TEST(SummaryText, CountsABooksRowsInItsFlops) {
  // 2 x 500 paths x 6000 instruments x 100,000 columns in 2 s: 300 GFLOP/s.
  RunTotals book = Resumed();
  book.instruments = 6000;
  book.columns_priced = 100000;
  book.columns_from_journal = 0;
  book.path_columns = 500 * 100000;
  EXPECT_EQ(SummaryText(book, 2.0),
            "priced 100000 columns x 500 paths x 4000 issuers (6000 instruments) in 2.000 s "
            "(server 1.900 s): 300.0 GFLOP/s\n");
  EXPECT_THAT(SummaryJson(book, 2.0, {}), HasSubstr("\"instruments\": 6000, "));
  EXPECT_THAT(SummaryJson(book, 2.0, {}), HasSubstr("\"flops\": 600000000000, "));
}

TEST(SummaryJson, IsOneFlatObject) {
  ResultFiles files;
  files.stats_csv = "out/stats \"a\".csv";
  files.full_npy = "sc.npy";
  EXPECT_EQ(SummaryJson(Resumed(), 2.0, files),
            "{\"columns_priced\": 64670, \"columns_from_journal\": 35330, \"column_begin\": 0, "
            "\"column_end\": 100000, \"paths\": 500, \"issuers\": 4000, \"instruments\": 0, "
            "\"wall_seconds\": 2, "
            "\"server_seconds\": 1.9, \"gemm_thread_seconds\": 0, "
            "\"statistics_thread_seconds\": 0, \"flops\": 258680000000, "
            "\"gflops_per_second\": 129.34, "
            "\"stats_out\": \"out/stats \\\"a\\\".csv\", \"full_out\": \"sc.npy\", "
            "\"prices_out\": null, \"values_out\": null, \"target\": null, "
            "\"columns_met_target\": null, "
            "\"columns_by_paths\": null}\n");
  // No time, no rate: null rather than an infinity JSON cannot hold.
  EXPECT_THAT(SummaryJson(Resumed(), 0.0, files), HasSubstr("\"gflops_per_second\": null"));
}

// 2,000 columns from 10,000 paths; 350 took a second round, 38 a third.
RunTotals Targeted() {
  RunTotals totals = Resumed();
  totals.target = "var_0.99 <= 2%";
  totals.columns_met = 1987;
  totals.columns_by_paths = {{10000, 1612}, {20000, 350}, {40000, 38}};
  return totals;
}

TEST(SummaryText, SaysHowManyColumnsMetTheTargetAndTheirPaths) {
  EXPECT_EQ(TargetLine(Targeted()),
            "target var_0.99 <= 2%: 1,987 of 2,000 columns met it; paths 10,000 x 1,612, 20,000 "
            "x 350, 40,000 x 38\n");
  EXPECT_THAT(SummaryText(Targeted(), 2.0), HasSubstr(absl::StrCat("\n", TargetLine(Targeted()))));
  EXPECT_THAT(SummaryText(Resumed(), 2.0), Not(HasSubstr("target")));
}

TEST(SummaryJson, SaysTheTargetInFlatFields) {
  EXPECT_THAT(SummaryJson(Targeted(), 2.0, ResultFiles{}),
              HasSubstr("\"target\": \"var_0.99 <= 2%\", \"columns_met_target\": 1987, "
                        "\"columns_by_paths\": \"10000:1612,20000:350,40000:38\"}"));
}

TEST(FormatProgress, PercentRateAndEta) {
  // 42,000 of 100,000, 21,000 of them by this run in 2.5 s: 8,400 columns/s,
  // 58,000 left: 6.9 s.
  EXPECT_EQ(FormatProgress(42000, 100000, 21000, 2.5),
            " 42.0%  42000 / 100000 columns  8400 columns/s  ETA 7s");
  EXPECT_EQ(FormatProgress(1000, 100000, 1000, 1.0),
            "  1.0%  1000 / 100000 columns  1000 columns/s  ETA 1m39s");
  EXPECT_EQ(FormatProgress(1, 100000, 1, 1.0),
            "  0.0%  1 / 100000 columns  1 columns/s  ETA 27h46m");
  EXPECT_EQ(FormatProgress(0, 10, 0, 0.0), "  0.0%  0 / 10 columns  0 columns/s  ETA --");
  EXPECT_EQ(FormatProgress(10, 10, 10, 0.5), "100.0%  10 / 10 columns  20 columns/s  ETA 0s");
  // A targeted request's round.
  EXPECT_EQ(FormatProgress(5, 10, 5, 1.0, 2, 4000),
            " 50.0%  5 / 10 columns  5 columns/s  ETA 1s  round 2: 4000 paths");
}

// What the line wrote to a file.
std::string Written(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text.push_back(static_cast<char>(c));
  return text;
}

TEST(ProgressLine, RedrawsInPlaceAtMostEvery100Ms) {
  using std::chrono::milliseconds;
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  const ProgressLine::Clock::time_point start{};
  ProgressLine line(file, start);
  line.Update(0, 0, 0, start);  // the range is not known yet: nothing
  line.Update(10, 100, 10, start + milliseconds(500));
  line.Update(20, 100, 20, start + milliseconds(550));  // too soon
  line.Update(30, 100, 30, start + milliseconds(600));
  line.Update(100, 100, 100, start + milliseconds(610));  // the last: always
  line.Finish();
  EXPECT_EQ(Written(file),
            "\r 10.0%  10 / 100 columns  20 columns/s  ETA 5s\x1b[K"
            "\r 30.0%  30 / 100 columns  50 columns/s  ETA 1s\x1b[K"
            "\r100.0%  100 / 100 columns  164 columns/s  ETA 0s\x1b[K\n");
  std::fclose(file);
}

}  // namespace
}  // namespace pricer
