#include "server/backends/cpu/column_attribution.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>

#include "server/backends/cpu/compress8.h"

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

// The paths from `first` on whose values are <= hi, ascending, into `out`
// (room for rows + kCandidateSlack); returns their count. Without branches:
// every path is written, the count advances past those kept.
constexpr int64_t kCandidateSlack = 16;
int64_t Candidates(const float* values, int64_t first, int64_t rows, float hi, int32_t* out) {
  int64_t n = 0;
  for (int64_t p = first; p < rows; ++p) {
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
  return n + Candidates(values, p, rows, hi, out + n);  // the last few
}

// The same with AVX2, which has no compress: 8 paths at a time, a compare,
// the kept lanes' numbers from compress8.h's table by the compare's mask, plus the
// first path's index, stored at once.
__attribute__((target("avx2,popcnt"))) int64_t CandidatesAvx2(const float* values, int64_t rows,
                                                              float hi, int32_t* out) {
  const __m256 bound = _mm256_set1_ps(hi);
  int64_t n = 0, p = 0;
  for (; p + 8 <= rows; p += 8) {
    const int keep =
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(values + p), bound, _CMP_LE_OQ));
    const __m256i lanes =
        _mm256_load_si256(reinterpret_cast<const __m256i*>(kKeptLanes.lanes[keep]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + n),
                        _mm256_add_epi32(lanes, _mm256_set1_epi32(static_cast<int32_t>(p))));
    n += __builtin_popcount(static_cast<unsigned>(keep));
  }
  return n + Candidates(values, p, rows, hi, out + n);  // the last few
}

}  // namespace

ColumnAttribution::ColumnAttribution(const StatisticsSelection& selection,
                                     const AttributionInputs& inputs, ReducerKernel kernel)
    : errors_(selection.errors),
      in_(inputs),
      delta_(selection.delta),
      vega_(selection.vega),
      bands_(ContributionBands(selection, inputs.paths)),
      band_paths_(bands_.size()),
      candidates_(static_cast<size_t>(inputs.paths + kCandidateSlack)) {
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
    int32_t* out = candidates_.data();
    const int64_t count = avx512_ ? CandidatesAvx512(values, in_.paths, hi, out)
                          : avx2_ ? CandidatesAvx2(values, in_.paths, hi, out)
                                  : Candidates(values, 0, in_.paths, hi, out);
    BandPaths(values, candidates_.data(), count, band, lo, hi,
              band_paths_[l].data() + c * band.size());
  }
}

void ColumnAttribution::SumSlice(const float* source, int64_t r0, int64_t width, bool squares) {
  const auto size = static_cast<size_t>(columns_ * kSlice);
  sums_.assign(size, 0.0);
  squares_.assign(squares ? size : 0, 0.0);
  const SlicePass pass{source,
                       in_.rows,
                       r0,
                       width,
                       union_.data(),
                       static_cast<int64_t>(union_.size()),
                       path_offsets_.data(),
                       path_columns_.data(),
                       sums_.data(),
                       squares ? squares_.data() : sums_.data()};
  AddSliceOn(avx512_, avx2_, pass, squares);
}

void ColumnAttribution::IndexBands(size_t l) {
  const int64_t n = bands_[l].size();
  const std::vector<int32_t>& band_paths = band_paths_[l];
  path_offsets_.assign(static_cast<size_t>(in_.paths + 1), 0);
  for (const int32_t p : band_paths) ++path_offsets_[static_cast<size_t>(p) + 1];
  union_.clear();
  for (int64_t p = 0; p < in_.paths; ++p) {
    if (path_offsets_[static_cast<size_t>(p) + 1] > 0) union_.push_back(static_cast<int32_t>(p));
    path_offsets_[static_cast<size_t>(p) + 1] += path_offsets_[static_cast<size_t>(p)];
  }
  path_columns_.resize(band_paths.size());
  std::vector<int32_t> next(path_offsets_.begin(), path_offsets_.end() - 1);
  for (int64_t c = 0; c < columns_; ++c) {
    for (int64_t i = 0; i < n; ++i) {
      const int32_t p = band_paths[static_cast<size_t>(c * n + i)];
      path_columns_[static_cast<size_t>(next[static_cast<size_t>(p)]++)] = static_cast<int32_t>(c);
    }
  }
}

void ColumnAttribution::SumLevel(size_t l, const float* positions, int64_t first,
                                 ColumnStatistics* out) {
  const double count = static_cast<double>(bands_[l].size());
  const double root = std::sqrt(count);
  const double discount = in_.discount;
  const int64_t rows = in_.rows;
  for (int64_t r0 = 0; r0 < rows; r0 += kSlice) {
    const int64_t width = std::min(kSlice, rows - r0);
    SumSlice(in_.x, r0, width, errors_);
    for (int64_t c = 0; c < columns_; ++c) {
      const float* a = positions + c * rows + r0;
      const double* sums = sums_.data() + c * kSlice;
      const size_t at = static_cast<size_t>((first + c) * rows + r0);
      float* contribution = out->contributions[l].data() + at;
      for (int64_t r = 0; r < width; ++r) {
        contribution[r] =
            static_cast<float>(-a[r] * (discount * sums[r] / count - in_.today[r0 + r]));
      }
      if (!errors_) continue;
      // The standard error of a mean over the band's paths (taken as
      // independent draws), scaled like it.
      const double* squares = squares_.data() + c * kSlice;
      float* se = out->contributions_se[l].data() + at;
      for (int64_t r = 0; r < width; ++r) {
        se[r] = static_cast<float>(std::abs(a[r]) * discount *
                                   ShiftedStddev(sums[r], squares[r], count) / root);
      }
    }
    // Each row's share of its issuer's delta and vega.
    for (auto [asked, source, today, shares] :
         {std::tuple{delta_, in_.delta, in_.delta_today, &delta_shares_},
          std::tuple{vega_, in_.vega, in_.vega_today, &vega_shares_}}) {
      if (!asked) continue;
      SumSlice(source, r0, width, false);
      for (int64_t c = 0; c < columns_; ++c) {
        const float* a = positions + c * rows + r0;
        const double* sums = sums_.data() + c * kSlice;
        double* to = shares->data() + c * in_.issuers;
        for (int64_t r = 0; r < width; ++r) {
          to[in_.issuer[r0 + r]] += -a[r] * (discount * sums[r] / count - today[r0 + r]);
        }
      }
    }
  }
}

void ColumnAttribution::SensitivityErrors(size_t l, const float* source, const float* positions,
                                          float* se) const {
  const int64_t n = bands_[l].size(), rows = in_.rows, issuers = in_.issuers;
  const double count = static_cast<double>(n), root = std::sqrt(count);
  std::vector<double> y(static_cast<size_t>(issuers)), sums(y.size()), squares(y.size());
  for (int64_t c = 0; c < columns_; ++c) {
    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(squares.begin(), squares.end(), 0.0);
    const float* a = positions + c * rows;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t p = band_paths_[l][static_cast<size_t>(c * n + k)];
      std::fill(y.begin(), y.end(), 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        y[static_cast<size_t>(in_.issuer[r])] += a[r] * static_cast<double>(source[p * rows + r]);
      }
      for (size_t i = 0; i < y.size(); ++i) sums[i] += y[i], squares[i] += y[i] * y[i];
    }
    for (size_t i = 0; i < y.size(); ++i) {
      se[c * issuers + static_cast<int64_t>(i)] =
          static_cast<float>(in_.discount * ShiftedStddev(sums[i], squares[i], count) / root);
    }
  }
}

void ColumnAttribution::Finish(const float* positions, int64_t first, ColumnStatistics* out) {
  const int64_t issuers = in_.issuers;
  for (size_t l = 0; l < bands_.size(); ++l) {
    IndexBands(l);
    const auto size = static_cast<size_t>(columns_ * issuers);
    delta_shares_.assign(delta_ ? size : 0, 0.0);
    vega_shares_.assign(vega_ ? size : 0, 0.0);
    SumLevel(l, positions, first, out);
    for (auto [asked, shares, to, se, source] :
         {std::tuple{delta_, &delta_shares_, &out->delta, &out->delta_se, in_.delta},
          std::tuple{vega_, &vega_shares_, &out->vega, &out->vega_se, in_.vega}}) {
      if (!asked) continue;
      float* values = (*to)[l].data() + first * issuers;
      for (size_t k = 0; k < size; ++k) values[k] = static_cast<float>((*shares)[k]);
      if (errors_) SensitivityErrors(l, source, positions, (*se)[l].data() + first * issuers);
    }
  }
}

}  // namespace pricer
