#include "server/backends/host/covariance_moments.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "common/status_macros.h"

namespace pricer {
namespace {

// Paths per float64 block of centred ST added into S: the block takes the
// room of a shard's float64 block of A (counted like it, before any shard
// runs).
constexpr int64_t kPathBlock = kColumnAlignment;

}  // namespace

CovarianceMoments::Buffers CovarianceMoments::BuffersOf(int64_t issuers) {
  return {BufferOf<double>("ST covariance and means", issuers * issuers + issuers),
          BufferOf<float>("scenario block A", issuers * kColumnAlignment),
          BufferOf<double>("scenario block A in float64", issuers * kColumnAlignment),
          BufferOf<double>("covariance block S A", issuers * kColumnAlignment)};
}

absl::Status CovarianceMoments::Of(const JobSpec& spec, const float* st, MemoryAccount& memory,
                                   CovarianceMoments* out) {
  const int64_t paths = spec.paths, n = spec.position_rows();
  out->paths_ = paths;
  out->issuers_ = n;
  RETURN_IF_ERROR(AccountedArray<double>::Allocate(memory, BuffersOf(n).moments, &out->values_));
  double* s = out->values_.data();
  double* mean = s + n * n;
  std::fill(s, s + n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t p = 0; p < paths; ++p) sum += st[i * paths + p];
    mean[i] = sum / static_cast<double>(paths);
  }
  // S = sum over blocks of X^T X, X the block's rows of ST less m (lower
  // triangle), then / (P - 1) and mirrored.
  AccountedArray<double> centred;
  RETURN_IF_ERROR(AccountedArray<double>::Allocate(memory, BuffersOf(n).a_doubles, &centred));
  for (int64_t first = 0; first < paths; first += kPathBlock) {
    RETURN_IF_ERROR(StopStatus(spec));
    const int64_t rows = std::min(kPathBlock, paths - first);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t r = 0; r < rows; ++r) {
        centred.data()[i * rows + r] = st[i * paths + first + r] - mean[i];
      }
    }
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, static_cast<blasint>(n),
                static_cast<blasint>(rows), 1.0, centred.data(), static_cast<blasint>(rows), 1.0, s,
                static_cast<blasint>(n));
  }
  const double divisor = paths > 1 ? static_cast<double>(paths - 1) : 1.0;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = j; i < n; ++i) s[j * n + i] = s[i * n + j] = s[j * n + i] / divisor;
  }
  return absl::OkStatus();
}

absl::Status CovarianceMoments::ReduceShard(const JobSpec& spec, const Shard& shard,
                                            const double* today, MemoryAccount& memory,
                                            ColumnStatistics* out) const {
  const int64_t n = issuers_;
  const StatisticsSelection& selection = spec.output.statistics;
  const Buffers buffers = BuffersOf(n);
  AccountedArray<float> block;
  AccountedArray<double> a, product;
  RETURN_IF_ERROR(AccountedArray<float>::Allocate(memory, buffers.a_block, &block));
  RETURN_IF_ERROR(AccountedArray<double>::Allocate(memory, buffers.a_doubles, &a));
  RETURN_IF_ERROR(AccountedArray<double>::Allocate(memory, buffers.products, &product));
  const double* covariance = values_.data();
  const double* mean = covariance + n * n;
  for (int64_t begin = shard.gemm_begin; begin < shard.gemm_end; begin += kColumnAlignment) {
    RETURN_IF_ERROR(StopStatus(spec));
    const int64_t count = std::min(kColumnAlignment, shard.gemm_end - begin);
    spec.scenarios.CopyColumns(begin, count, block.data());
    std::copy(block.data(), block.data() + n * count, a.data());
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(n),
                static_cast<blasint>(count), static_cast<blasint>(n), 1.0, covariance,
                static_cast<blasint>(n), a.data(), static_cast<blasint>(n), 0.0, product.data(),
                static_cast<blasint>(n));
    const int64_t keep_begin = std::max(begin, shard.out_begin);
    const int64_t keep_end = std::min(begin + count, shard.out_end);
    for (int64_t column = keep_begin; column < keep_end; ++column) {
      const int64_t c = column - begin, k = column - shard.out_begin;
      const double* x = a.data() + c * n;
      const double* sx = product.data() + c * n;
      double value = 0, variance = 0;
      for (int64_t i = 0; i < n; ++i) {
        value += mean[i] * x[i];
        variance += x[i] * sx[i];
      }
      PortfolioValues(block.data() + c * n, n, today, 1, &out->v0[static_cast<size_t>(k)]);
      if (selection.mean) out->mean[static_cast<size_t>(k)] = value;
      if (selection.stddev) {
        out->stddev[static_cast<size_t>(k)] = paths_ > 1 ? std::sqrt(std::max(variance, 0.0)) : 0.0;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace pricer
