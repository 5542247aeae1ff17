// SIMD traits of 8 floats shared by the direct and implicit-GEMM convolution kernels: Portable
// (GCC vector extensions, lowered to 2 x SSE2 on baseline x86-64) and, in files compiled with
// -mavx2 -mfma (*_avx2.cc), Avx2. Internal linkage only and no standard-library inline code, so
// AVX2 instructions can never be picked by the linker for a caller built for baseline x86-64.
#pragma once
#include <cstdint>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace nnperf::conv_simd {
namespace {

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

struct Portable {
  using V = float __attribute__((vector_size(32)));
  static constexpr int kWidth = 8;
  static V zero() { return V{}; }
  static V loadu(const float* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof(v));
    return v;
  }
  static V load(const float* p) { return loadu(p); }
  static void storeu(float* p, V v) { __builtin_memcpy(p, &v, sizeof(v)); }
  static V load_partial(const float* p, int count) {
    V v = zero();
    __builtin_memcpy(&v, p, sizeof(float) * count);
    return v;
  }
  static void store_partial(float* p, V v, int count) {
    __builtin_memcpy(p, &v, sizeof(float) * count);
  }
  static V set1(float x) { return V{x, x, x, x, x, x, x, x}; }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V add(V a, V b) { return a + b; }
  static V mul(V a, V b) { return a * b; }
};

#if defined(__AVX2__)
// 8 ones then 8 zeros: the mask of the first `count` lanes starts at kLaneMask + 8 - count.
alignas(64) constexpr int kLaneMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

struct Avx2 {
  using V = __m256;
  static constexpr int kWidth = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const float* p) { return _mm256_load_ps(p); }
  static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  static __m256i mask(int count) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLaneMask + 8 - count));
  }
  static V load_partial(const float* p, int count) { return _mm256_maskload_ps(p, mask(count)); }
  static void store_partial(float* p, V v, int count) { _mm256_maskstore_ps(p, mask(count), v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
};
#endif

}  // namespace
}  // namespace nnperf::conv_simd
