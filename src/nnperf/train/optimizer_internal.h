// Shared between the optimizer and its SIMD variants (optimizer_avx2.cc).
#pragma once
#include <cstdint>

#include "nnperf/kernels/adam.h"

namespace nnperf {

// AVX2 body of the Adam update; the scalar tail repeats the portable operations exactly.
void adam_update_avx2(float* w, const float* grad, float* m, float* v, int64_t n, const AdamCoefficients& c);

}  // namespace nnperf
