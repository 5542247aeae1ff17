// Small element-wise and reduction kernels used by layers. Plain loops that GCC vectorises at
// -O3; sum_rows accumulates in double over column tiles kept on the stack, so a long reduction
// (mb in the thousands) stays accurate without scratch memory.
#include "nnperf/kernels/elementwise.h"

#include <algorithm>
#include <bit>
#include <cstdint>

namespace nnperf {

void add_bias_rows(float* dst, const float* bias, int64_t mb, int64_t n, int64_t ld) {
  for (int64_t r = 0; r < mb; ++r) {
    float* row = dst + r * ld;
    for (int64_t c = 0; c < n; ++c) row[c] += bias[c];
  }
}

void sum_rows(const float* d_dst, float* d_bias, int64_t mb, int64_t n, int64_t ld) {
  constexpr int64_t kTile = 256;  // 2 KB of double accumulators: stays in L1 with the row slice
  double acc[kTile];
  for (int64_t c0 = 0; c0 < n; c0 += kTile) {
    const int64_t width = std::min(kTile, n - c0);
    std::fill_n(acc, width, 0.0);
    for (int64_t r = 0; r < mb; ++r) {
      const float* row = d_dst + r * ld + c0;
      for (int64_t c = 0; c < width; ++c) acc[c] += row[c];
    }
    for (int64_t c = 0; c < width; ++c) d_bias[c0 + c] = static_cast<float>(acc[c]);
  }
}

void add_inplace(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

void add_elementwise(const float* a, const float* b, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

void clamp(const float* x, float* y, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], lo), hi);
}

void clamp_backward(const float* x, const float* dy, float* dx, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) dx[i] = (x[i] > lo && x[i] < hi) ? dy[i] : 0.0f;
}

void multiply(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void scale(const float* x, float s, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
}

bool all_finite(const float* x, int64_t n, int threads) {
  // Exponent all ones = inf or NaN. An OR over the loop (no early exit) vectorises.
  constexpr uint32_t kExponent = 0x7F800000u;
  constexpr int64_t kMinPerThread = int64_t{1} << 16;  // a read-only pass: ~20 us of one core
  const int t = useful_threads(threads, static_cast<double>(n), kMinPerThread);
  uint32_t bad = 0;
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static) reduction(| : bad)
  for (int64_t i = 0; i < n; ++i) {
    bad |= static_cast<uint32_t>((std::bit_cast<uint32_t>(x[i]) & kExponent) == kExponent);
  }
  return bad == 0;
}

}  // namespace nnperf
