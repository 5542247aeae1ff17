// The FFT convolutions' frequency-domain multiply-accumulate with AVX2+FMA: fft_mac_impl.h on
// 8-float ymm vectors. Compiled with -mavx2 -mfma (CMake, by file name); exports only mac_avx2,
// which fft_engine.cc calls after checking the CPU.
#include <immintrin.h>

#include "nnperf/kernels/conv/fft_internal.h"
#include "nnperf/kernels/conv/fft_mac_impl.h"

namespace nnperf::fft_conv {

namespace {

struct Avx2 {
  using V = __m256;
  static V zero() { return _mm256_setzero_ps(); }
  // The buffers are 64-byte aligned, but the packed weights come from the caller: unaligned
  // loads cost nothing extra on aligned data.
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a*b
};

}  // namespace

void mac_avx2(const MacArgs& m) { MacKernel<Avx2>::run(m); }

}  // namespace nnperf::fft_conv
