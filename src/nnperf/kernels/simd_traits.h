// SIMD traits of float vectors, the one vocabulary the kernels' loop nests are written over (each
// nest is a template on a traits type K, instantiated once per SIMD level in a file compiled with
// that level's flags): direct and implicit-GEMM convolution (conv/conv_simd.h), the blocked GEMM
// (gemm/blocked*.cc) and the FMA peak loop (peak/peak_impl.h).
//   K::V, K::kWidth lanes; zero, set1; load (aligned), loadu, storeu; load_partial /
//   store_partial (the first `count` lanes, the others read as zero / left alone); fmadd
//   (a*b + c), add, sub, mul; load_even_odd (the 2 * kWidth floats from p split into the
//   even-indexed and the odd-indexed ones, in order: stride-2 reads).
// Portable<V>: GCC vector extensions (lowered to SSE2 on baseline x86-64); -std=c++20 does not
// contract a*b+c, so it rounds twice. Avx2 in files built with -mavx2 -mfma, Avx512 with
// -mavx512f. Internal linkage only and no standard-library inline code, so instructions of one
// level can never be picked by the linker for a caller compiled for another.
#pragma once
#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace nnperf::simd {

using F32x4 = float __attribute__((vector_size(16)));
using F32x8 = float __attribute__((vector_size(32)));

namespace {

template <class Vec>
struct Portable {
  using V = Vec;
  static constexpr int kWidth = sizeof(V) / sizeof(float);
  static_assert(kWidth == 4 || kWidth == 8);
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
  static V set1(float x) {
    if constexpr (kWidth == 4) {
      return V{x, x, x, x};
    } else {
      return V{x, x, x, x, x, x, x, x};
    }
  }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static void load_even_odd(const float* p, V& even, V& odd) {
    const V a = loadu(p), b = loadu(p + kWidth);
    if constexpr (kWidth == 4) {
      even = __builtin_shufflevector(a, b, 0, 2, 4, 6);
      odd = __builtin_shufflevector(a, b, 1, 3, 5, 7);
    } else {
      even = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
      odd = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
    }
  }
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
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  // In-lane shuffles give [a0 a2 b0 b2 | a4 a6 b4 b6]; swapping the middle 64-bit pairs orders
  // them.
  static void load_even_odd(const float* p, V& even, V& odd) {
    const V a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    even = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
    odd = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
  }
};
#endif

#if defined(__AVX512F__)
struct Avx512 {
  using V = __m512;
  static constexpr int kWidth = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const float* p) { return _mm512_load_ps(p); }
  static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  static __mmask16 mask(int count) { return static_cast<__mmask16>((1u << count) - 1u); }
  static V load_partial(const float* p, int count) { return _mm512_maskz_loadu_ps(mask(count), p); }
  static void store_partial(float* p, V v, int count) { _mm512_mask_storeu_ps(p, mask(count), v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static void load_even_odd(const float* p, V& even, V& odd) {
    const V a = _mm512_loadu_ps(p), b = _mm512_loadu_ps(p + 16);
    const __m512i evens =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    even = _mm512_permutex2var_ps(a, evens, b);
    odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(evens, _mm512_set1_epi32(1)), b);
  }
};
#endif

}  // namespace
}  // namespace nnperf::simd
