#include "server/backends/cpu/column_attribution.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace pricer {
namespace {

// Rows of X per pass over a block's bands.
constexpr int64_t kSlice = 128;

// One pass of a block over rows [r0, r0 + width) of X (width <= kSlice):
// each path of the union (ascending) has its columns at columns[offsets[p]
// .. offsets[p + 1]); their sums (and squares) are kSlice apart.
struct SlicePass {
  const float* by_path;
  int64_t rows, r0, width;
  const int32_t* union_paths;
  int64_t union_size;
  const int32_t* offsets;
  const int32_t* columns;
  double* sums;
  double* squares;
};

// Each path's slice in float64, added to each of its columns' sums: every
// column adds its paths in path order, whatever the vector width, so all
// kernels give the same bits.
template <bool kSquares>
inline void AddSlice(const SlicePass& s) {
  alignas(64) double x[kSlice];
  for (int64_t u = 0; u < s.union_size; ++u) {
    const int32_t p = s.union_paths[u];
    const float* row = s.by_path + static_cast<int64_t>(p) * s.rows + s.r0;
    for (int64_t r = 0; r < kSlice; ++r) x[r] = r < s.width ? row[r] : 0.0;
    for (int32_t k = s.offsets[p]; k < s.offsets[p + 1]; ++k) {
      double* __restrict sum = s.sums + static_cast<int64_t>(s.columns[k]) * kSlice;
      double* __restrict square = s.squares + static_cast<int64_t>(s.columns[k]) * kSlice;
      for (int64_t r = 0; r < kSlice; ++r) {
        sum[r] += x[r];
        if constexpr (kSquares) square[r] += x[r] * x[r];
      }
    }
  }
}

template <bool kSquares>
__attribute__((target("avx512f"), flatten)) void AddSliceAvx512(const SlicePass& s) {
  AddSlice<kSquares>(s);
}

template <bool kSquares>
__attribute__((target("avx2"), flatten)) void AddSliceAvx2(const SlicePass& s) {
  AddSlice<kSquares>(s);
}

void AddSliceOn(bool avx512, bool avx2, const SlicePass& s, bool squares) {
  if (avx512) return squares ? AddSliceAvx512<true>(s) : AddSliceAvx512<false>(s);
  if (avx2) return squares ? AddSliceAvx2<true>(s) : AddSliceAvx2<false>(s);
  return squares ? AddSlice<true>(s) : AddSlice<false>(s);
}

// The paths whose values are <= hi, ascending, into `out` (room for rows +
// kCandidateSlack); returns their count. Without branches: every path is
// written, the count advances past those kept.
constexpr int64_t kCandidateSlack = 16;
int64_t Candidates(const float* values, int64_t rows, float hi, int32_t* out) {
  int64_t n = 0;
  for (int64_t p = 0; p < rows; ++p) {
    out[n] = static_cast<int32_t>(p);
    n += values[p] <= hi ? 1 : 0;
  }
  return n;
}

// The same, 16 paths at a time: a compare, a compress of their indices into
// a register (the form that writes memory is microcoded on some
// processors) and one store.
__attribute__((target("avx512f,popcnt"))) int64_t CandidatesAvx512(const float* values,
                                                                   int64_t rows, float hi,
                                                                   int32_t* out) {
  const __m512 bound = _mm512_set1_ps(hi);
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i index = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t n = 0, p = 0;
  for (; p + 16 <= rows; p += 16) {
    const __mmask16 keep = _mm512_cmp_ps_mask(_mm512_loadu_ps(values + p), bound, _CMP_LE_OQ);
    _mm512_storeu_si512(out + n, _mm512_maskz_compress_epi32(keep, index));
    n += __builtin_popcount(keep);
    index = _mm512_add_epi32(index, sixteen);
  }
  for (; p < rows; ++p) {
    out[n] = static_cast<int32_t>(p);
    n += values[p] <= hi ? 1 : 0;
  }
  return n;
}

}  // namespace

ColumnAttribution::ColumnAttribution(const StatisticsSelection& selection, int64_t paths,
                                     int64_t rows, const float* by_path, const double* today,
                                     double discount, ReducerKernel kernel)
    : errors_(selection.errors),
      paths_(paths),
      rows_(rows),
      by_path_(by_path),
      today_(today),
      discount_(discount),
      bands_(ContributionBands(selection, paths)),
      band_paths_(bands_.size()),
      candidates_(static_cast<size_t>(paths + kCandidateSlack)) {
  const bool has_avx512 = __builtin_cpu_supports("avx512f");
  const bool has_avx2 = __builtin_cpu_supports("avx2");
  avx512_ = has_avx512 && (kernel == ReducerKernel::kBest || kernel == ReducerKernel::kAvx512);
  avx2_ =
      !avx512_ && has_avx2 && (kernel == ReducerKernel::kBest || kernel == ReducerKernel::kAvx2);
}

void ColumnAttribution::Begin(int64_t columns) {
  columns_ = columns;
  for (size_t l = 0; l < bands_.size(); ++l) {
    band_paths_[l].resize(static_cast<size_t>(columns * bands_[l].size()));
  }
}

void ColumnAttribution::Select(int64_t c, const float* values, const ColumnReducer& reducer) {
  for (size_t l = 0; l < bands_.size(); ++l) {
    const TailBand band = bands_[l];
    const float lo = band.bounded ? reducer.OrderStatistic(band.first) : 0.0f;
    const float hi = reducer.OrderStatistic(band.last);
    const int64_t count = avx512_ ? CandidatesAvx512(values, paths_, hi, candidates_.data())
                                  : Candidates(values, paths_, hi, candidates_.data());
    BandPaths(values, candidates_.data(), count, band, lo, hi,
              band_paths_[l].data() + c * band.size());
  }
}

void ColumnAttribution::SumSlice(int64_t r0, int64_t width) {
  const auto size = static_cast<size_t>(columns_ * kSlice);
  sums_.assign(size, 0.0);
  squares_.assign(errors_ ? size : 0, 0.0);
  const SlicePass pass{by_path_,
                       rows_,
                       r0,
                       width,
                       union_.data(),
                       static_cast<int64_t>(union_.size()),
                       path_offsets_.data(),
                       path_columns_.data(),
                       sums_.data(),
                       errors_ ? squares_.data() : sums_.data()};
  AddSliceOn(avx512_, avx2_, pass, errors_);
}

void ColumnAttribution::Finish(const float* positions, int64_t first, ColumnStatistics* out) {
  for (size_t l = 0; l < bands_.size(); ++l) {
    const int64_t n = bands_[l].size();
    const std::vector<int32_t>& band_paths = band_paths_[l];
    // Each path's columns, in column order, and the paths of any band.
    path_offsets_.assign(static_cast<size_t>(paths_ + 1), 0);
    for (const int32_t p : band_paths) ++path_offsets_[static_cast<size_t>(p) + 1];
    union_.clear();
    for (int64_t p = 0; p < paths_; ++p) {
      if (path_offsets_[static_cast<size_t>(p) + 1] > 0) union_.push_back(static_cast<int32_t>(p));
      path_offsets_[static_cast<size_t>(p) + 1] += path_offsets_[static_cast<size_t>(p)];
    }
    path_columns_.resize(band_paths.size());
    std::vector<int32_t> next(path_offsets_.begin(), path_offsets_.end() - 1);
    for (int64_t c = 0; c < columns_; ++c) {
      for (int64_t i = 0; i < n; ++i) {
        const int32_t p = band_paths[static_cast<size_t>(c * n + i)];
        path_columns_[static_cast<size_t>(next[static_cast<size_t>(p)]++)] =
            static_cast<int32_t>(c);
      }
    }
    const double count = static_cast<double>(n);
    const double root = std::sqrt(count);
    for (int64_t r0 = 0; r0 < rows_; r0 += kSlice) {
      const int64_t width = std::min(kSlice, rows_ - r0);
      SumSlice(r0, width);
      for (int64_t c = 0; c < columns_; ++c) {
        const float* a = positions + c * rows_ + r0;
        const double* sums = sums_.data() + c * kSlice;
        const size_t at = static_cast<size_t>((first + c) * rows_ + r0);
        float* contribution = out->contributions[l].data() + at;
        for (int64_t r = 0; r < width; ++r) {
          contribution[r] =
              static_cast<float>(-a[r] * (discount_ * sums[r] / count - today_[r0 + r]));
        }
        if (!errors_) continue;
        // The standard error of a mean over the band's paths (taken as
        // independent draws), scaled like it.
        const double* squares = squares_.data() + c * kSlice;
        float* se = out->contributions_se[l].data() + at;
        for (int64_t r = 0; r < width; ++r) {
          se[r] = static_cast<float>(std::abs(a[r]) * discount_ *
                                     ShiftedStddev(sums[r], squares[r], count) / root);
        }
      }
    }
  }
}

}  // namespace pricer
