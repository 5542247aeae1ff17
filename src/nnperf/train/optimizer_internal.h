// Shared between the optimizer and its SIMD variants (optimizer_avx2.cc).
#pragma once
#include <cstdint>

namespace nnperf {

struct AdamCoefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, weight_decay;
  float step_size;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  float eps;
};

// AVX2 body of the Adam update; the scalar tail repeats the portable operations exactly.
void adam_update_avx2(float* w, const float* grad, float* m, float* v, int64_t n, const AdamCoefficients& c);

}  // namespace nnperf
