// Small element-wise and reduction kernels used by layers. Letters: mb (rows), n (columns).
#pragma once
#include <cstdint>

namespace nnperf {

// dst[r, c] += bias[c] for a row-major mb x n matrix with leading dimension ld.
void add_bias_rows(float* dst, const float* bias, int64_t mb, int64_t n, int64_t ld);
// d_bias[c] = sum_r d_dst[r, c] (overwrites).
void sum_rows(const float* d_dst, float* d_bias, int64_t mb, int64_t n, int64_t ld);
// dst[i] += src[i]
void add_inplace(float* dst, const float* src, int64_t n);
// dst[i] = a[i] + b[i] (dst may alias a or b)
void add_elementwise(const float* a, const float* b, float* dst, int64_t n);
// True when every element is finite; up to `threads` threads on long arrays.
bool all_finite(const float* x, int64_t n, int threads = 1);

}  // namespace nnperf
