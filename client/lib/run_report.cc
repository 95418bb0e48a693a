#include "client/lib/run_report.h"

#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace pricer {
namespace {

// `text` as a JSON string.
std::string JsonString(const std::string& text) {
  std::string json = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      json.push_back('\\');
      json.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&json, absl::StrFormat("\\u%04x", static_cast<int>(c)));
    } else {
      json.push_back(c);
    }
  }
  return json + "\"";
}

// The shortest fixed decimal that reads back as `value` (flops as an
// integer, not 2.5868e+11); JSON has no NaN or infinity (a run of no time),
// so those are null.
std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  char text[400];  // the longest, 1e308, has 309 digits
  return std::string(text,
                     std::to_chars(text, text + sizeof(text), value, std::chars_format::fixed).ptr);
}

std::string JsonFile(const std::string& path) { return path.empty() ? "null" : JsonString(path); }

// "7s", "2m05s", "3h20m".
std::string Duration(double seconds) {
  const int64_t s = std::llround(seconds);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
}

// 1612 -> "1,612".
std::string Thousands(int64_t n) {
  const std::string digits = absl::StrCat(n);
  const size_t sign = n < 0 ? 1 : 0;
  std::string text;
  for (size_t k = 0; k < digits.size(); ++k) {
    if (k > sign && (digits.size() - k) % 3 == 0) text.push_back(',');
    text.push_back(digits[k]);
  }
  return text;
}

}  // namespace

// 2 R flops a path and column, R = A's rows: the instruments of a book, or
// the issuers.
double RunFlops(const RunTotals& totals) {
  const int64_t rows = totals.instruments > 0 ? totals.instruments : totals.issuers;
  return 2.0 * static_cast<double>(rows) * static_cast<double>(totals.path_columns);
}

std::string TargetLine(const RunTotals& totals) {
  int64_t columns = 0;
  std::vector<std::string> by_paths;
  for (const auto& [paths, count] : totals.columns_by_paths) {
    columns += count;
    by_paths.push_back(absl::StrCat(Thousands(paths), " x ", Thousands(count)));
  }
  return absl::StrCat("target ", totals.target, ": ", Thousands(totals.columns_met), " of ",
                      Thousands(columns), " columns met it; paths ", absl::StrJoin(by_paths, ", "),
                      "\n");
}

std::string SummaryText(const RunTotals& totals, double wall_seconds) {
  std::string journal;
  if (totals.columns_from_journal > 0) {
    journal = absl::StrCat(" (", totals.columns_from_journal, " more from the journal)");
  }
  // A targeted run's columns used several path counts: the least and the most.
  std::string paths = absl::StrCat(totals.paths);
  if (totals.columns_by_paths.size() > 1) {
    paths = absl::StrCat(totals.columns_by_paths.begin()->first, " to ",
                         totals.columns_by_paths.rbegin()->first);
  }
  const std::string book =
      totals.instruments > 0 ? absl::StrCat(" (", totals.instruments, " instruments)") : "";
  std::string text = absl::StrFormat(
      "priced %d columns%s x %s paths x %d issuers%s in %.3f s (server %.3f s): %.1f GFLOP/s\n",
      totals.columns_priced, journal, paths, totals.issuers, book, wall_seconds,
      totals.server_seconds, RunFlops(totals) / wall_seconds / 1e9);
  if (totals.statistics_seconds > 0) {
    absl::StrAppend(&text, absl::StrFormat("device thread-seconds: GEMM %.3f, statistics %.3f\n",
                                           totals.gemm_seconds, totals.statistics_seconds));
  }
  if (!totals.target.empty()) absl::StrAppend(&text, TargetLine(totals));
  return text;
}

std::string SummaryJson(const RunTotals& totals, double wall_seconds, const ResultFiles& files) {
  const double flops = RunFlops(totals);
  std::string target = "null", met = "null", by_paths = "null";
  if (!totals.target.empty()) {
    target = JsonString(totals.target);
    met = absl::StrCat(totals.columns_met);
    by_paths = JsonString(absl::StrJoin(totals.columns_by_paths, ",", absl::PairFormatter(":")));
  }
  const std::vector<std::pair<const char*, std::string>> fields = {
      {"columns_priced", absl::StrCat(totals.columns_priced)},
      {"columns_from_journal", absl::StrCat(totals.columns_from_journal)},
      {"column_begin", absl::StrCat(totals.column_begin)},
      {"column_end", absl::StrCat(totals.column_end)},
      {"paths", absl::StrCat(totals.paths)},
      {"issuers", absl::StrCat(totals.issuers)},
      {"instruments", absl::StrCat(totals.instruments)},
      {"wall_seconds", JsonNumber(wall_seconds)},
      {"server_seconds", JsonNumber(totals.server_seconds)},
      {"gemm_thread_seconds", JsonNumber(totals.gemm_seconds)},
      {"statistics_thread_seconds", JsonNumber(totals.statistics_seconds)},
      {"flops", JsonNumber(flops)},
      {"gflops_per_second", JsonNumber(flops / wall_seconds / 1e9)},
      {"stats_out", JsonFile(files.stats_csv)},
      {"full_out", JsonFile(files.full_npy)},
      {"prices_out", JsonFile(files.prices_npy)},
      {"values_out", JsonFile(files.values_npy)},
      {"target", target},
      {"columns_met_target", met},
      {"columns_by_paths", by_paths},
  };
  return absl::StrCat(
      "{",
      absl::StrJoin(fields, ", ",
                    [](std::string* out, const std::pair<const char*, std::string>& field) {
                      absl::StrAppend(out, "\"", field.first, "\": ", field.second);
                    }),
      "}\n");
}

std::string FormatProgress(int64_t done, int64_t total, int64_t priced, double seconds, int round,
                           int64_t round_paths) {
  const double percent = total > 0 ? 100.0 * static_cast<double>(done) / total : 0.0;
  const double rate = seconds > 0 ? static_cast<double>(priced) / seconds : 0.0;
  const std::string eta =
      rate > 0 ? Duration(static_cast<double>(total - done) / rate) : std::string("--");
  std::string line = absl::StrFormat("%5.1f%%  %d / %d columns  %.0f columns/s  ETA %s", percent,
                                     done, total, rate, eta);
  if (round >= 0)
    absl::StrAppend(&line, absl::StrFormat("  round %d: %d paths", round, round_paths));
  return line;
}

bool ProgressLine::Due(Clock::time_point now, int64_t done, int64_t total) const {
  if (total <= 0) return false;
  return !drawn_ || done >= total || now - last_ >= std::chrono::milliseconds(100);
}

void ProgressLine::Update(int64_t done, int64_t total, int64_t priced, Clock::time_point now) {
  if (!Due(now, done, total)) return;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  // "\x1b[K" clears what a longer line left behind.
  std::fprintf(out_, "\r%s\x1b[K",
               FormatProgress(done, total, priced, seconds, round_, round_paths_).c_str());
  std::fflush(out_);
  drawn_ = true;
  last_ = now;
}

void ProgressLine::Finish() {
  if (drawn_) std::fprintf(out_, "\n");
  drawn_ = false;
}

}  // namespace pricer
