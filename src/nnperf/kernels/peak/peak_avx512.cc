// AVX-512 FMA loop: 16 independent zmm accumulators (two 512-bit FMA pipes on server Intel
// cores; one or two on others, which is exactly what this loop is here to find out).
#include <immintrin.h>

#include <cstdint>

namespace nnperf {

double fma_peak_loop_avx512(int64_t iters, float* sink) {
  constexpr int kChains = 16;
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c + 1));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  // Stored and summed by hand: GCC 12's _mm512_reduce_add_ps trips -Wuninitialized.
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  float t = 0;
  for (float v : out) t += v;
  *sink = t;
  return 2.0 * 16.0 * kChains * static_cast<double>(iters);
}

}  // namespace nnperf
