// Adam's update 8 floats at a time (AVX2). sqrt and div dominate; at ~118k parameters (the
// srivas63_CMSE401 MLP) the whole update is ~15k iterations, about half the SSE version's time.
#include <immintrin.h>

#include <cmath>

#include "nnperf/train/optimizer_internal.h"

namespace nnperf {

void adam_update_avx2(float* w, const float* grad, float* m, float* v, int64_t n, const AdamCoefficients& c) {
  int64_t j = 0;
  const __m256 b1 = _mm256_set1_ps(c.beta1), omb1 = _mm256_set1_ps(c.one_minus_beta1);
  const __m256 b2 = _mm256_set1_ps(c.beta2), omb2 = _mm256_set1_ps(c.one_minus_beta2);
  const __m256 wd = _mm256_set1_ps(c.weight_decay), step = _mm256_set1_ps(c.step_size);
  const __m256 isb = _mm256_set1_ps(c.inv_sqrt_bc2), eps = _mm256_set1_ps(c.eps);
  for (; j + 8 <= n; j += 8) {
    const __m256 wj = _mm256_loadu_ps(w + j);
    const __m256 g = _mm256_add_ps(_mm256_loadu_ps(grad + j), _mm256_mul_ps(wd, wj));
    const __m256 mj = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + j)), _mm256_mul_ps(omb1, g));
    const __m256 vj = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + j)), _mm256_mul_ps(_mm256_mul_ps(omb2, g), g));
    const __m256 denom = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(vj), isb), eps);
    _mm256_storeu_ps(m + j, mj);
    _mm256_storeu_ps(v + j, vj);
    _mm256_storeu_ps(w + j, _mm256_sub_ps(wj, _mm256_div_ps(_mm256_mul_ps(step, mj), denom)));
  }
  for (; j < n; ++j) {
    const float g = grad[j] + c.weight_decay * w[j];
    m[j] = c.beta1 * m[j] + c.one_minus_beta1 * g;
    v[j] = c.beta2 * v[j] + (c.one_minus_beta2 * g) * g;
    const float denom = std::sqrt(v[j]) * c.inv_sqrt_bc2 + c.eps;
    w[j] -= (c.step_size * m[j]) / denom;
  }
}

void sgd_update_avx2(float* w, const float* grad, float* buf, int64_t n, const SgdCoefficients& c) {
  int64_t j = 0;
  const __m256 wd = _mm256_set1_ps(c.weight_decay), lr = _mm256_set1_ps(c.lr);
  const __m256 keep = _mm256_set1_ps(c.keep), mu = _mm256_set1_ps(c.momentum);
  for (; j + 8 <= n; j += 8) {
    const __m256 wj = _mm256_loadu_ps(w + j);
    const __m256 g = _mm256_add_ps(_mm256_loadu_ps(grad + j), _mm256_mul_ps(wd, wj));
    __m256 step = g;
    if (buf != nullptr) {
      const __m256 b = _mm256_add_ps(_mm256_mul_ps(keep, _mm256_loadu_ps(buf + j)), g);
      _mm256_storeu_ps(buf + j, b);
      step = c.nesterov ? _mm256_add_ps(g, _mm256_mul_ps(mu, b)) : b;
    }
    _mm256_storeu_ps(w + j, _mm256_sub_ps(wj, _mm256_mul_ps(lr, step)));
  }
  for (; j < n; ++j) sgd_element(w, grad, buf, j, c);
}

}  // namespace nnperf
