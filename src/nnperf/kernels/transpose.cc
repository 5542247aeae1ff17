#include "nnperf/kernels/transpose.h"

#include <algorithm>

namespace nnperf {

namespace {

// 8 x 8 blocks, so that each block's source rows and destination rows stay in L1.
void transpose_portable(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                        int64_t ld_dst) {
  for (int64_t i0 = 0; i0 < rows; i0 += 8) {
    const int64_t i1 = std::min(rows, i0 + 8);
    for (int64_t j0 = 0; j0 < cols; j0 += 8) {
      const int64_t j1 = std::min(cols, j0 + 8);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) dst[j * ld_dst + i] = src[i * ld_src + j];
      }
    }
  }
}

}  // namespace

TransposeFn transpose_floats_at(SimdLevel level) {
  const SimdLevel cap = std::min(level, cpu_info().simd);
  return cap >= SimdLevel::kAvx2 ? &detail::transpose_floats_avx2 : &transpose_portable;
}

void transpose_floats(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                      int64_t ld_dst) {
  static const TransposeFn fn = transpose_floats_at(active_simd());
  fn(src, rows, cols, ld_src, dst, ld_dst);
}

}  // namespace nnperf
