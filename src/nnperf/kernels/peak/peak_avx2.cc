// AVX2 FMA loop: 12 independent ymm accumulators. Zen 3 and recent Intel cores have two FMA
// pipes with 4-5 cycles latency, so at least 8-10 chains are needed to keep both busy.
#include <immintrin.h>

#include <cstdint>

namespace nnperf {

double fma_peak_loop_avx2(int64_t iters, float* sink) {
  constexpr int kChains = 12;
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c + 1));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  float t = 0;
  for (float v : out) t += v;
  *sink = t;
  return 2.0 * 8.0 * kChains * static_cast<double>(iters);
}

}  // namespace nnperf
