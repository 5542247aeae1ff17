// Small element-wise and reduction kernels used by layers. Letters: mb (rows), n (columns).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "nnperf/core/threads.h"

namespace nnperf {

// dst[r, c] += bias[c] for a row-major mb x n matrix with leading dimension ld.
void add_bias_rows(float* dst, const float* bias, int64_t mb, int64_t n, int64_t ld);
// d_bias[c] = sum_r d_dst[r, c] (overwrites).
void sum_rows(const float* d_dst, float* d_bias, int64_t mb, int64_t n, int64_t ld);
// dst[i] += src[i]
void add_inplace(float* dst, const float* src, int64_t n);
// dst[i] = a[i] + b[i] (dst may alias a or b)
void add_elementwise(const float* a, const float* b, float* dst, int64_t n);
// y[i] = min(max(x[i], lo), hi), a NaN kept (ReLU6: lo 0, hi 6); y may alias x.
void clamp(const float* x, float* y, int64_t n, float lo, float hi);
// clamp's backward: dx[i] = dy[i] where lo < x[i] < hi, else 0.
void clamp_backward(const float* x, const float* dy, float* dx, int64_t n, float lo, float hi);
// y[i] = a[i] * b[i] (Dropout's mask, forward and backward); y may alias a or b.
void multiply(const float* a, const float* b, float* y, int64_t n);
// y[i] = x[i] * s (the mean of accumulated gradients); y may alias x.
void scale(const float* x, float s, float* y, int64_t n);
// True when every element is finite; up to `threads` threads on long arrays.
bool all_finite(const float* x, int64_t n, int threads = 1);

// Slice `id` of `nt` of [0, n) in whole blocks of `align` (the last may be shorter, some may be
// empty): [lo, hi).
inline std::pair<int64_t, int64_t> slice_of(int64_t n, int64_t align, int64_t id, int64_t nt) {
  const int64_t blocks = (n + align - 1) / align;
  return {std::min(n, blocks * id / nt * align), std::min(n, blocks * (id + 1) / nt * align)};
}

// fn(lo, hi) over [0, n) in one slice per thread, each a multiple of 64 elements but the last,
// when n is long enough to pay for the threads (32768 elements each, ~20 us of one core); else
// fn(0, n) on the calling thread. For element-wise work: a SIMD body and scalar tail see the same
// elements at any split (the tail stays the last n % width), so the floats are the same.
template <class Fn>
void for_slices(int64_t n, int threads, Fn&& fn) {
  constexpr int64_t kMinPerThread = int64_t{1} << 15, kAlign = 64;
  const int t = useful_threads(threads, static_cast<double>(n), kMinPerThread);
  if (t <= 1) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(t)
  {
    const auto [lo, hi] = slice_of(n, kAlign, omp_get_thread_num(), omp_get_num_threads());
    if (hi > lo) fn(lo, hi);
  }
}

}  // namespace nnperf
