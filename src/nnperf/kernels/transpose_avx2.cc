// transpose.h's transpose in AVX2 (the flags CMakeLists.txt gives *_avx2.cc); used only after a
// CPUID check (transpose.cc).
#include <algorithm>

#include "nnperf/kernels/simd_transpose.h"
#include "nnperf/kernels/transpose.h"

namespace nnperf::detail {

// Whole 8 x 8 blocks in registers; the edges (a last block of fewer than 8 rows or columns)
// one float at a time.
void transpose_floats_avx2(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                           int64_t ld_dst) {
  const int64_t rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
  for (int64_t i0 = 0; i0 < rows8; i0 += 8) {
    for (int64_t j0 = 0; j0 < cols8; j0 += 8) {
      simd::transpose_8x8(src + i0 * ld_src + j0, ld_src, dst + j0 * ld_dst + i0, ld_dst);
    }
    for (int64_t j = cols8; j < cols; ++j) {
      for (int64_t i = i0; i < i0 + 8; ++i) dst[j * ld_dst + i] = src[i * ld_src + j];
    }
  }
  for (int64_t j0 = 0; j0 < cols; j0 += 8) {
    const int64_t j1 = std::min(cols, j0 + 8);
    for (int64_t j = j0; j < j1; ++j) {
      for (int64_t i = rows8; i < rows; ++i) dst[j * ld_dst + i] = src[i * ld_src + j];
    }
  }
}

}  // namespace nnperf::detail
