#include "nnperf/kernels/peak/peak.h"

namespace nnperf {

double fma_peak_loop_avx2(int64_t iters, float* sink);
double fma_peak_loop_avx512(int64_t iters, float* sink);

namespace {
// Portable version: 8 scalar chains; the compiler may or may not contract to FMA.
double fma_peak_loop_scalar(int64_t iters, float* sink) {
  float acc[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const float a = 0.999999f, b = 1e-7f;
  for (int64_t i = 0; i < iters; ++i) {
    for (float& x : acc) x = x * a + b;
  }
  float s = 0;
  for (float x : acc) s += x;
  *sink = s;
  return 2.0 * 8.0 * static_cast<double>(iters);
}
}  // namespace

double fma_peak_loop(SimdLevel level, int64_t iters, float* sink) {
  switch (level) {
    case SimdLevel::kAvx512:
      return fma_peak_loop_avx512(iters, sink);
    case SimdLevel::kAvx2:
      return fma_peak_loop_avx2(iters, sink);
    default:
      return fma_peak_loop_scalar(iters, sink);
  }
}

void stream_triad(float* a, const float* b, const float* c, float s, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

}  // namespace nnperf
