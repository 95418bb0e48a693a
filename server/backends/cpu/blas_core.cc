#include "server/backends/cpu/blas_core.h"

#include <cblas.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace pricer {
namespace {

constexpr const char* kReplacedVariable = "PRICER_BLAS_CORE_REPLACED";

// OpenBLAS's x86-64 cores (the names of driver/others/dynamic.c), by the
// widest vectors their kernels use. "Unknown" and later names are kUnknown.
enum class VectorClass { kSse, kAvx, kAvx2, kAvx512, kUnknown };

VectorClass ClassOf(std::string_view core) {
  static constexpr std::array<std::pair<std::string_view, VectorClass>, 26> kCores = {{
      {"Katmai", VectorClass::kSse},        {"Coppermine", VectorClass::kSse},
      {"Northwood", VectorClass::kSse},     {"Prescott", VectorClass::kSse},
      {"Banias", VectorClass::kSse},        {"Atom", VectorClass::kSse},
      {"Core2", VectorClass::kSse},         {"Penryn", VectorClass::kSse},
      {"Dunnington", VectorClass::kSse},    {"Nehalem", VectorClass::kSse},
      {"Athlon", VectorClass::kSse},        {"Opteron", VectorClass::kSse},
      {"Opteron_SSE3", VectorClass::kSse},  {"Barcelona", VectorClass::kSse},
      {"Nano", VectorClass::kSse},          {"Bobcat", VectorClass::kSse},
      {"Sandybridge", VectorClass::kAvx},   {"Bulldozer", VectorClass::kAvx},
      {"Piledriver", VectorClass::kAvx},    {"Steamroller", VectorClass::kAvx},
      {"Excavator", VectorClass::kAvx2},    {"Haswell", VectorClass::kAvx2},
      {"Zen", VectorClass::kAvx2},          {"SkylakeX", VectorClass::kAvx512},
      {"Cooperlake", VectorClass::kAvx512}, {"SapphireRapids", VectorClass::kAvx512},
  }};
  for (const auto& [name, vector_class] : kCores) {
    if (name == core) return vector_class;
  }
  return VectorClass::kUnknown;
}

// The core of the processor's widest class, and that class.
std::pair<std::string, VectorClass> WidestCore(const ProcessorVectors& p) {
  if (p.avx512) return {p.avx512_bf16 ? "Cooperlake" : "SkylakeX", VectorClass::kAvx512};
  if (p.avx2_fma) return {p.amd ? "Zen" : "Haswell", VectorClass::kAvx2};
  if (p.avx) return {"Sandybridge", VectorClass::kAvx};
  return {"", VectorClass::kSse};
}

}  // namespace

ProcessorVectors ThisProcessor() {
  __builtin_cpu_init();
  ProcessorVectors p;
  p.avx = __builtin_cpu_supports("avx");
  p.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  p.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  p.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  p.amd = __builtin_cpu_is("amd");
  return p;
}

std::string BetterBlasCore(std::string_view loaded, const ProcessorVectors& processor) {
  const VectorClass have = ClassOf(loaded);
  auto [core, widest] = WidestCore(processor);
  if (have == VectorClass::kUnknown || core.empty() || have >= widest) return "";
  return core;
}

std::string LoadedBlasCore() {
  const char* name = openblas_get_corename();
  return name == nullptr ? "" : name;
}

std::string BlasKernels() {
  // openblas_get_config(): "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...".
  std::string_view config = openblas_get_config();
  size_t end = config.find(' ');
  if (end != std::string_view::npos) end = config.find(' ', end + 1);
  std::string text = std::string(config.substr(0, end)) + ", " + LoadedBlasCore() + " kernels";
  if (const char* replaced = std::getenv(kReplacedVariable); replaced != nullptr) {
    text += std::string(" (the library's own choice here: ") + replaced + ")";
  }
  return text;
}

void RunOnTheProcessorsBlasCore(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const std::string loaded = LoadedBlasCore();
  const std::string better = BetterBlasCore(loaded, ThisProcessor());
  if (better.empty()) return;
  setenv("OPENBLAS_CORETYPE", better.c_str(), 1);
  setenv(kReplacedVariable, loaded.c_str(), 1);
  // By the program's own path, so that the process keeps its name (ps,
  // pgrep, /proc/PID/comm say "pricerd", not "exe"); by /proc/self/exe
  // where that path is gone (the program replaced on disk since it started).
  std::array<char, 4096> self{};
  const ssize_t length = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (length > 0) execv(self.data(), argv);
  execv("/proc/self/exe", argv);
  const int error = errno;
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kReplacedVariable);
  spdlog::warn(
      "OpenBLAS runs its {} kernels on a processor with {}'s instructions: executing "
      "this program again with OPENBLAS_CORETYPE={} failed ({})",
      loaded, better, better, std::strerror(error));
}

}  // namespace pricer
