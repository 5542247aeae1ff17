// An 8 x 8 float transpose in AVX2 registers, shared by the blocked GEMM's packing
// (gemm/blocked_kernel_impl.h) and the plain transposes of transpose_avx2.cc. Only for
// translation units compiled with AVX2 (the *_avx2.cc / *_avx512.cc files).
#pragma once
#if defined(__AVX2__)
#include <immintrin.h>

#include <cstdint>

namespace nnperf::simd {

// dst[p*ld_dst + j] = src[j*ld_src + p] for an 8 x 8 block: 8 row loads, 24 shuffles, 8 stores
// instead of 64 scalar moves.
inline void transpose_8x8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  __m256 r[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + j * ld_src);
  __m256 t[8];
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  __m256 u[8];
  for (int j = 0; j < 8; j += 4) {
    u[j] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int p = 0; p < 4; ++p) {
    _mm256_storeu_ps(dst + p * ld_dst, _mm256_permute2f128_ps(u[p], u[p + 4], 0x20));
    _mm256_storeu_ps(dst + (p + 4) * ld_dst, _mm256_permute2f128_ps(u[p], u[p + 4], 0x31));
  }
}

}  // namespace nnperf::simd
#endif
