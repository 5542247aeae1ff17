// transpose.h's transpose in AVX2 (the flags CMakeLists.txt gives *_avx2.cc); used only after a
// CPUID check (transpose.cc).
#include <immintrin.h>

#include <algorithm>

#include "nnperf/kernels/simd_transpose.h"
#include "nnperf/kernels/transpose.h"

namespace nnperf::detail {

namespace {

__m256i lanes(int64_t count) {  // the first `count` of 8 lanes
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), index);
}

// An edge block of 8 rows and c < 8 columns (a narrow matrix: a 2x2 kernel's 4 taps, a 2x2
// map's 4 pixels): each row loaded whole (8 floats, the lanes past c unused) where those 8 floats
// lie within the matrix (before `end`, one past its last float), else by a masked load, which is
// much slower on AMD (so are masked stores: whole rows are stored); the 8 x 8 transpose; c rows
// stored.
void transpose_8xc(const float* src, int64_t c, int64_t ld_src, const float* end, float* dst,
                   int64_t ld_dst) {
  __m256 r[8];
  const __m256i load = lanes(c);
  for (int64_t j = 0; j < 8; ++j) {
    const float* row = src + j * ld_src;
    r[j] = end - row >= 8 ? _mm256_loadu_ps(row) : _mm256_maskload_ps(row, load);
  }
  alignas(32) float in[64], out[64];
  for (int j = 0; j < 8; ++j) _mm256_store_ps(in + 8 * j, r[j]);
  simd::transpose_8x8(in, 8, out, 8);
  for (int64_t p = 0; p < c; ++p) _mm256_storeu_ps(dst + p * ld_dst, _mm256_load_ps(out + 8 * p));
}

}  // namespace

// Whole 8 x 8 blocks in registers, and blocks of 8 rows and fewer columns through masked loads;
// a last block of fewer than 8 rows one float at a time; a single row or column is a copy.
void transpose_floats_avx2(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                           int64_t ld_dst) {
  if (rows == 1 || cols == 1) {
    const int64_t step = rows == 1 ? 1 : ld_src;  // src's floats in order
    const int64_t out = rows == 1 ? ld_dst : 1;
    const int64_t n = std::max(rows, cols);
    if (step == 1 && out == 1) {
      std::copy(src, src + n, dst);
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i * out] = src[i * step];
    }
    return;
  }
  const float* end = src + (rows - 1) * ld_src + cols;
  for (int64_t i0 = 0; i0 < rows; i0 += 8) {
    const int64_t r = std::min<int64_t>(8, rows - i0);
    for (int64_t j0 = 0; j0 < cols; j0 += 8) {
      const int64_t c = std::min<int64_t>(8, cols - j0);
      const float* s = src + i0 * ld_src + j0;
      float* d = dst + j0 * ld_dst + i0;
      if (r == 8 && c == 8) {
        simd::transpose_8x8(s, ld_src, d, ld_dst);
      } else if (r == 8) {
        transpose_8xc(s, c, ld_src, end, d, ld_dst);
      } else {  // the last rows, fewer than 8: one float at a time
        for (int64_t j = 0; j < c; ++j) {
          for (int64_t i = 0; i < r; ++i) d[j * ld_dst + i] = s[i * ld_src + j];
        }
      }
    }
  }
}

}  // namespace nnperf::detail
