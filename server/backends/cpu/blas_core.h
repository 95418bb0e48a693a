// Which of OpenBLAS's kernel sets ("cores") the process runs, and a correction
// for a processor newer than the library.
//
// OpenBLAS (built DYNAMIC_ARCH, as Debian's is) chooses its core once, as it
// loads: the one OPENBLAS_CORETYPE names, else the one it recognises the
// processor as. A processor it does not know gets its fallback: Debian 12's
// OpenBLAS 0.3.21 runs an Intel Xeon of family 6, model 207 (Emerald Rapids,
// AVX-512) on its Prescott (SSE3) kernels, 32.7 GFLOP/s on two cores where
// its SkylakeX and Cooperlake kernels run 200-300 (bench/bare_sgemm). The
// choice cannot change after the library has loaded, so a program that
// multiplies calls RunOnTheProcessorsBlasCore first thing in main: where
// the loaded core uses fewer of the processor's instructions than it has
// and OPENBLAS_CORETYPE is unset, it sets OPENBLAS_CORETYPE and executes
// the program again. A user's OPENBLAS_CORETYPE is always kept.
#pragma once

#include <string>
#include <string_view>

namespace pricer {

// The vector instructions of a processor that decide OpenBLAS's cores.
struct ProcessorVectors {
  bool avx = false;
  bool avx2_fma = false;  // AVX2 and FMA
  bool avx512 = false;    // AVX-512 F, CD, BW, DQ and VL (OpenBLAS's SkylakeX)
  bool avx512_bf16 = false;
  bool amd = false;
};

// This process's processor (cpuid, and whether the OS saves its registers).
ProcessorVectors ThisProcessor();

// The core to ask OpenBLAS for instead of `loaded`, or "" to keep it: a core
// of the processor's widest class (AVX-512: Cooperlake with BF16, else
// SkylakeX; AVX2: Zen on AMD, else Haswell; AVX: Sandybridge) where
// `loaded` is of a narrower one. A name this table does not know (a later
// library's core) is kept.
std::string BetterBlasCore(std::string_view loaded, const ProcessorVectors& processor);

// The core OpenBLAS loaded (openblas_get_corename), e.g. "Cooperlake".
std::string LoadedBlasCore();

// What the cpu backend's GEMMs run, for logs and ListDevices: "OpenBLAS
// 0.3.21, Cooperlake kernels", and where RunOnTheProcessorsBlasCore
// replaced the library's own choice, "(the library's own choice here:
// Prescott)".
std::string BlasKernels();

// Where BetterBlasCore(LoadedBlasCore(), ThisProcessor()) names a core and
// OPENBLAS_CORETYPE is unset: sets it, and PRICER_BLAS_CORE_REPLACED to the
// loaded core, and executes this program again (its path as /proc/self/exe
// gives it) with `argv`: the same process id, name, arguments and otherwise
// the same environment. Returns where there is nothing to change or the
// exec failed (then the loaded core runs, and BlasKernels says so).
void RunOnTheProcessorsBlasCore(char** argv);

}  // namespace pricer
