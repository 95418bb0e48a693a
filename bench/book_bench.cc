// Issue 29's target: building the book's values V (P x K Black-Scholes
// revaluations, server/model/instruments.h) against the shard GEMMs that
// multiply them, side by side on one core. The GEMM is timed on one
// 256-column block of the service's shape (one cpu-backend task) and scaled
// to `--scenarios` columns; V is built once per job. Prints JSON with both
// single-thread times and V's share of the GEMMs'.
//
//   book_bench --paths 10000 --issuers 500 --options-per-issuer 2 --scenarios 100000
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "CLI/CLI.hpp"
#include "server/backends/cpu/blas_core.h"
#include "server/model/instruments.h"

namespace {

template <typename Body>
double Best(int repeats, Body body) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// ST as the seed example's GBM gives it (spots U(5, 10), volatilities
// U(0, 1), one year) and a book of `per_issuer` calls and puts on each
// issuer, struck at the spot, expiring in 1.5 years (half a year past the
// horizon).
struct Book {
  std::vector<float> st;
  std::vector<pricer::InstrumentTerms> terms;
};

Book MakeBook(int64_t paths, int64_t issuers, int64_t per_issuer, std::mt19937& rng) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::normal_distribution<double> normal;
  Book book;
  book.st.resize(static_cast<size_t>(paths * issuers));
  for (int64_t i = 0; i < issuers; ++i) {
    const double spot = 5 + 5 * uniform(rng), sigma = uniform(rng);
    for (int64_t p = 0; p < paths; ++p) {
      book.st[static_cast<size_t>(i * paths + p)] =
          static_cast<float>(spot * std::exp(0.02 - sigma * sigma / 2 + sigma * normal(rng)));
    }
    for (int64_t k = 0; k < per_issuer; ++k) {
      const auto type = k % 2 == 0 ? pricer::InstrumentType::kCall : pricer::InstrumentType::kPut;
      book.terms.push_back(pricer::TermsOf(i, type, spot, 0.5, 0.02, sigma));
    }
  }
  return book;
}

}  // namespace

int main(int argc, char** argv) {
  pricer::RunOnTheProcessorsBlasCore(argv);  // the GEMMs on the kernels pricerd runs
  int64_t paths = 10000, issuers = 500, per_issuer = 2, scenarios = 100000;
  int repeats = 3;
  CLI::App app{"V's build against the shard GEMMs, one core"};
  app.add_option("--paths", paths, "P")->check(CLI::Range(1, 1000000));
  app.add_option("--issuers", issuers, "N")->check(CLI::Range(1, 100000));
  app.add_option("--options-per-issuer", per_issuer, "K / N: a call and a put, ...")
      ->check(CLI::Range(1, 16));
  app.add_option("--scenarios", scenarios, "M the GEMM time is scaled to")
      ->check(CLI::Range(1, 1000000000));
  app.add_option("--repeats", repeats, "runs of each; the fastest is reported")
      ->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  openblas_set_num_threads(1);

  std::mt19937 rng(7);
  const Book book = MakeBook(paths, issuers, per_issuer, rng);
  const std::vector<float>& st = book.st;
  const std::vector<pricer::InstrumentTerms>& terms = book.terms;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const auto rows = static_cast<int64_t>(terms.size());
  std::vector<float> v(static_cast<size_t>(paths * rows));
  const double build = Best(repeats, [&] {
    pricer::InstrumentValuesAtHorizon(terms, st.data(), paths, 0, rows, v.data());
  });

  constexpr int64_t kBlock = 256;  // kColumnAlignment: one cpu-backend task
  std::vector<float> a(static_cast<size_t>(rows * kBlock));
  for (float& x : a) x = static_cast<float>(uniform(rng));
  std::vector<float> sc(static_cast<size_t>(paths * kBlock), 0.0f);
  const double block = Best(repeats, [&] {
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(paths),
                static_cast<blasint>(kBlock), static_cast<blasint>(rows), 1.0f, v.data(),
                static_cast<blasint>(paths), a.data(), static_cast<blasint>(rows), 0.0f, sc.data(),
                static_cast<blasint>(paths));
  });
  const double gemm = block * static_cast<double>(scenarios) / kBlock;
  const double flops = 2.0 * static_cast<double>(paths) * static_cast<double>(rows) * kBlock;
  std::printf(
      "{\"paths\": %lld, \"instruments\": %lld, \"scenarios\": %lld, \"build_seconds\": %.4f, "
      "\"ns_per_value\": %.1f, \"gemm_seconds\": %.3f, \"gemm_gflops\": %.2f, "
      "\"build_share_of_gemm\": %.4f}\n",
      static_cast<long long>(paths), static_cast<long long>(rows),
      static_cast<long long>(scenarios), build, build * 1e9 / static_cast<double>(paths * rows),
      gemm, flops / block / 1e9, build / gemm);
  return 0;
}
