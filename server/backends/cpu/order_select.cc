#include "server/backends/cpu/order_select.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "server/backends/cpu/compress8.h"

namespace pricer {
namespace {

using Split = OrderSelect::Split;
using SmallSelect = void (*)(const float* w, int64_t n, std::span<const int64_t> ranks,
                             int64_t base, float* out);

// At most this many values are left to SelectSmall.
constexpr int64_t kSmall = 16;

// Sets out[k] to the value of rank ranks[k] - base of w[0, n), n <= kSmall,
// from each value's count of values under it (its rank when the values
// differ): the value of rank r is the largest of those with at most r under
// them. w is read as kSmall values, +infinity past n (a padding value has
// every finite value under it, so it is the largest only where r reaches
// +infinity's own ranks).
void SseSelectSmall(const float* w, int64_t n, std::span<const int64_t> ranks, int64_t base,
                    float* out) {
  // Four SSE vectors, every x86-64 processor's (GCC splits wider generic
  // vectors into scalars without AVX).
  typedef float Floats4 __attribute__((vector_size(16)));
  typedef int32_t Ints4 __attribute__((vector_size(16)));
  constexpr int kVectors = kSmall / 4;
  alignas(16) float padded[kSmall];
  for (int64_t i = 0; i < kSmall; ++i) {
    padded[i] = i < n ? w[i] : std::numeric_limits<float>::infinity();
  }
  Floats4 all[kVectors];
  Ints4 under[kVectors] = {};  // lanes of -1 per value under
  std::memcpy(all, padded, sizeof(all));
  for (int64_t j = 0; j < n; ++j) {
    const Floats4 v = w[j] - Floats4{};
    for (int k = 0; k < kVectors; ++k) under[k] += v < all[k];
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    const int32_t most = static_cast<int32_t>(ranks[r] - base);
    Floats4 largest = -std::numeric_limits<float>::infinity() - Floats4{};
    for (int k = 0; k < kVectors; ++k) {
      const Floats4 x = -under[k] <= most ? all[k] : largest;
      largest = x > largest ? x : largest;
    }
    out[r] = std::max(std::max(largest[0], largest[1]), std::max(largest[2], largest[3]));
  }
}

// The same in one AVX-512 register: a compare to a mask and a masked add per
// value, a masked maximum per rank.
__attribute__((target("avx512f"))) void Avx512SelectSmall(const float* w, int64_t n,
                                                          std::span<const int64_t> ranks,
                                                          int64_t base, float* out) {
  const __m512 infinity = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __mmask16 real = static_cast<__mmask16>((1u << n) - 1);
  const __m512 all = _mm512_mask_loadu_ps(infinity, real, w);
  const __m512i one = _mm512_set1_epi32(1);
  __m512i under = _mm512_setzero_si512();
  for (int64_t j = 0; j < n; ++j) {
    const __mmask16 over = _mm512_cmp_ps_mask(all, _mm512_set1_ps(w[j]), _CMP_GT_OQ);
    under = _mm512_mask_add_epi32(under, over, under, one);
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    const __mmask16 at_most = _mm512_cmp_epi32_mask(
        under, _mm512_set1_epi32(static_cast<int32_t>(ranks[r] - base)), _MM_CMPINT_LE);
    // The largest by halving, in GCC's vector code: GCC 12 warns of its own
    // AVX-512 shuffle intrinsics (maybe-uninitialized).
    typedef float Floats16 __attribute__((vector_size(64)));
    Floats16 m = (Floats16)_mm512_mask_blend_ps(at_most, lowest, all);
    Floats16 t =
        __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    m = m > t ? m : t;
    t = __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    m = m > t ? m : t;
    t = __builtin_shufflevector(m, m, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    m = m > t ? m : t;
    out[r] = std::max(m[0], m[1]);
  }
}

// A pivot for rank t of w[0, n), n > kSmall: one of 16 values spread over w,
// the sample's j-th smallest, which has about (j + 1) n / 17 values under
// it. Chosen a little past t toward w's nearer end, so that the part that
// holds t is the smaller one.
float PivotFor(const float* w, int64_t n, int64_t t, SmallSelect small) {
  constexpr int64_t kSample = 16;
  float sample[kSample];
  for (int64_t k = 0; k < kSample; ++k) sample[k] = w[(2 * k + 1) * n / (2 * kSample)];
  const int64_t j = 2 * t < n ? t * (kSample + 1) / n : ((t + 1) * (kSample + 1) + n - 1) / n - 2;
  const int64_t rank = std::clamp<int64_t>(j, 0, kSample - 1);
  float pivot = 0;
  small(sample, kSample, {&rank, 1}, 0, &pivot);
  return pivot;
}

// After a partition's vector steps: the values [i, n) one at a time, then
// the pivots and the values over it (from `over`) put in place.
Split PartitionRest(float* w, int64_t i, int64_t n, float pivot, float* over, int64_t lt,
                    int64_t gt) {
  for (; i < n; ++i) {
    const float v = w[i];
    w[lt] = v;
    lt += v < pivot ? 1 : 0;
    over[gt] = v;
    gt += v > pivot ? 1 : 0;
  }
  const int64_t le = n - gt;
  std::fill(w + lt, w + le, pivot);
  std::memcpy(w + le, over, static_cast<size_t>(gt) * sizeof(float));
  return {lt, le};
}

// The partition in eight lanes: those under the pivot packed to the front of
// w in place (a store at lt <= i writes only values already read), those
// over it to `over`.
template <typename Compress>
__attribute__((always_inline)) inline Split PartitionBody(float* w, int64_t n, float pivot,
                                                          float* over) {
  const Floats8 p8 = pivot - Floats8{};
  int64_t lt = 0, gt = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    Floats8 x;
    std::memcpy(&x, w + i, sizeof(x));
    lt = Compress::Store(x, x < p8, w, lt);
    gt = Compress::Store(x, x > p8, over, gt);
  }
  return PartitionRest(w, i, n, pivot, over, lt, gt);
}

Split PortablePartition(float* w, int64_t n, float pivot, float* over) {
  return PartitionBody<PortableCompress>(w, n, pivot, over);
}

__attribute__((target("avx2,popcnt"), flatten)) Split Avx2Partition(float* w, int64_t n,
                                                                    float pivot, float* over) {
  return PartitionBody<Avx2Compress>(w, n, pivot, over);
}

// Sixteen values a step, each side's compress into a register and one store
// (as the column pass's).
__attribute__((target("avx512f,avx512vl,avx512dq,popcnt"))) Split Avx512Partition(float* w,
                                                                                  int64_t n,
                                                                                  float pivot,
                                                                                  float* over) {
  const __m512 p = _mm512_set1_ps(pivot);
  int64_t lt = 0, gt = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(w + i);
    const __mmask16 under = _mm512_cmp_ps_mask(x, p, _CMP_LT_OQ);
    const __mmask16 above = _mm512_cmp_ps_mask(x, p, _CMP_GT_OQ);
    _mm512_storeu_ps(w + lt, _mm512_maskz_compress_ps(under, x));
    _mm512_storeu_ps(over + gt, _mm512_maskz_compress_ps(above, x));
    lt += __builtin_popcount(under);
    gt += __builtin_popcount(above);
  }
  return PartitionRest(w, i, n, pivot, over, lt, gt);
}

}  // namespace

// Each kernel's partition and selection of a few.
struct OrderSelect::Kernel {
  Partition partition;
  SmallSelect small;
};

namespace {
constexpr OrderSelect::Kernel kPortableKernel{PortablePartition, SseSelectSmall};
constexpr OrderSelect::Kernel kAvx2Kernel{Avx2Partition, SseSelectSmall};
constexpr OrderSelect::Kernel kAvx512Kernel{Avx512Partition, Avx512SelectSmall};
}  // namespace

OrderSelect::OrderSelect(ReducerKernel kernel, int depth_limit) : depth_limit_(depth_limit) {
  switch (ResolvedKernel(kernel)) {
    case ReducerKernel::kAvx512:
      kernel_ = &kAvx512Kernel;
      break;
    case ReducerKernel::kAvx2:
      kernel_ = &kAvx2Kernel;
      break;
    default:
      kernel_ = &kPortableKernel;
  }
}

void OrderSelect::Select(const float* values, int64_t n, std::span<const int64_t> ranks, float* out,
                         int64_t first) {
  work_.assign(values, values + n);
  over_.resize(static_cast<size_t>(n + kColumnPassSlack));
  SelectIn(work_.data(), n, ranks, first, out, 0);
}

void OrderSelect::SelectIn(float* w, int64_t n, std::span<const int64_t> ranks, int64_t base,
                           float* out, int depth) {
  while (!ranks.empty()) {
    if (n <= kSmall) return kernel_->small(w, n, ranks, base, out);
    if (depth++ >= depth_limit_) {
      std::sort(w, w + n);
      for (size_t k = 0; k < ranks.size(); ++k) out[k] = w[ranks[k] - base];
      return;
    }
    const float pivot = PivotFor(w, n, ranks[ranks.size() / 2] - base, kernel_->small);
    const Split split = kernel_->partition(w, n, pivot, over_.data());
    auto first_at = [&](int64_t at) {
      return static_cast<size_t>(std::lower_bound(ranks.begin(), ranks.end(), base + at) -
                                 ranks.begin());
    };
    const size_t under = first_at(split.lt), equal = first_at(split.le);
    SelectIn(w, split.lt, ranks.first(under), base, out, depth);
    std::fill(out + under, out + equal, pivot);
    w += split.le;
    n -= split.le;
    base += split.le;
    ranks = ranks.subspan(equal);
    out += equal;
  }
}

}  // namespace pricer
