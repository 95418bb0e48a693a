// The baseline of the end-to-end benchmarks: one bare cblas_sgemm of the
// service's shape, ST (P x N) times A (N x M), with every core, as a user
// would call BLAS in their own process. Prints JSON: the seconds of the call
// (inputs filled and the output touched beforehand, so neither allocation
// nor page faults are timed), its GFLOP/s and the kernels that ran. It runs
// OpenBLAS's kernels as pricerd does (RunOnTheProcessorsBlasCore).
//
//   bare_sgemm --paths 10000 --issuers 500 --scenarios 100000 [--repeats 1]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "server/backends/cpu/blas_core.h"

int main(int argc, char** argv) {
  pricer::RunOnTheProcessorsBlasCore(argv);
  int64_t paths = 10000, issuers = 500, scenarios = 100000;
  int repeats = 1;
  CLI::App app{"one multi-threaded cblas_sgemm of shape P x N times N x M"};
  app.add_option("--paths", paths, "P")->check(CLI::Range(1, 1000000));
  app.add_option("--issuers", issuers, "N")->check(CLI::Range(1, 100000));
  app.add_option("--scenarios", scenarios, "M")->check(CLI::Range(1, 10000000));
  app.add_option("--repeats", repeats, "calls; the fastest is reported")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> st(static_cast<size_t>(paths * issuers));
  std::vector<float> a(static_cast<size_t>(issuers * scenarios));
  for (float& v : st) v = 5.0f + 5.0f * uniform(rng);
  for (float& v : a) v = uniform(rng);
  std::vector<float> sc(static_cast<size_t>(paths * scenarios), 0.0f);
  openblas_set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(paths),
                static_cast<blasint>(scenarios), static_cast<blasint>(issuers), 1.0f, st.data(),
                static_cast<blasint>(paths), a.data(), static_cast<blasint>(issuers), 0.0f,
                sc.data(), static_cast<blasint>(paths));
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const double flops = 2.0 * static_cast<double>(paths) * static_cast<double>(issuers) *
                       static_cast<double>(scenarios);
  std::printf(
      "{\"paths\": %lld, \"issuers\": %lld, \"scenarios\": %lld, \"seconds\": %.6f, "
      "\"gflops\": %.3f, \"threads\": %u, \"kernels\": \"%s\"}\n",
      static_cast<long long>(paths), static_cast<long long>(issuers),
      static_cast<long long>(scenarios), best, flops / best / 1e9,
      std::max(1u, std::thread::hardware_concurrency()), pricer::BlasKernels().c_str());
  return 0;
}
