// OpenBLAS's core against the processor's vectors: which cores pricerd
// replaces (those of narrower vectors than the processor has) and with what.
// pricerd_blas_core_test.py checks a real pricerd on this machine.
#include "server/backends/cpu/blas_core.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace pricer {
namespace {

ProcessorVectors Vectors(bool avx, bool avx2_fma, bool avx512, bool bf16, bool amd) {
  return ProcessorVectors{avx, avx2_fma, avx512, bf16, amd};
}

TEST(BlasCoreTest, TheLibrarysFallbackGivesWayToTheProcessorsWidestCore) {
  // Debian 12's OpenBLAS 0.3.21 on an Intel Emerald Rapids: Prescott.
  EXPECT_EQ(BetterBlasCore("Prescott", Vectors(true, true, true, true, false)), "Cooperlake");
  EXPECT_EQ(BetterBlasCore("Prescott", Vectors(true, true, true, false, false)), "SkylakeX");
  EXPECT_EQ(BetterBlasCore("Nehalem", Vectors(true, true, false, false, false)), "Haswell");
  EXPECT_EQ(BetterBlasCore("Prescott", Vectors(true, true, false, false, true)), "Zen");
  EXPECT_EQ(BetterBlasCore("Core2", Vectors(true, false, false, false, false)), "Sandybridge");
  EXPECT_EQ(BetterBlasCore("Haswell", Vectors(true, true, true, false, false)), "SkylakeX");
  EXPECT_EQ(BetterBlasCore("Sandybridge", Vectors(true, true, false, false, true)), "Zen");
}

TEST(BlasCoreTest, ACoreAsWideAsTheProcessorIsKept) {
  EXPECT_EQ(BetterBlasCore("Cooperlake", Vectors(true, true, true, true, false)), "");
  EXPECT_EQ(BetterBlasCore("SkylakeX", Vectors(true, true, true, true, false)), "");
  EXPECT_EQ(BetterBlasCore("SapphireRapids", Vectors(true, true, true, true, false)), "");
  EXPECT_EQ(BetterBlasCore("Zen", Vectors(true, true, false, false, true)), "");
  EXPECT_EQ(BetterBlasCore("Haswell", Vectors(true, true, false, false, true)), "");
  EXPECT_EQ(BetterBlasCore("Excavator", Vectors(true, true, false, false, true)), "");
  // Wider than the processor (OPENBLAS_CORETYPE's business, not ours).
  EXPECT_EQ(BetterBlasCore("SkylakeX", Vectors(true, true, false, false, false)), "");
  // An SSE-only processor has nothing wider to offer.
  EXPECT_EQ(BetterBlasCore("Prescott", Vectors(false, false, false, false, false)), "");
}

TEST(BlasCoreTest, NamesTheTableDoesNotKnowAreKept) {
  const ProcessorVectors widest = Vectors(true, true, true, true, false);
  for (const char* name : {"", "Unknown", "GraniteRapids", "prescott", "Prescott "}) {
    EXPECT_EQ(BetterBlasCore(name, widest), "") << "'" << name << "'";
  }
}

TEST(BlasCoreTest, KernelsNameTheLoadedCoreAndTheVersion) {
  const std::string kernels = BlasKernels();
  EXPECT_EQ(kernels.rfind("OpenBLAS 0.", 0), 0u) << kernels;
  EXPECT_NE(kernels.find(", " + LoadedBlasCore() + " kernels"), std::string::npos) << kernels;
  EXPECT_FALSE(LoadedBlasCore().empty());
  // This test binary never executes itself again: no replaced core to name
  // unless the environment says so.
  EXPECT_EQ(kernels.find("own choice") == std::string::npos,
            std::getenv("PRICER_BLAS_CORE_REPLACED") == nullptr)
      << kernels;
}

}  // namespace
}  // namespace pricer
