// BatchNorm's per-channel training loops (batchnorm.h), compiled once per instruction set:
// batchnorm.cc (any x86-64), batchnorm_avx2.cc and batchnorm_avx512.cc, each exporting its
// BatchNormPaths (batchnorm_internal.h). Plain loops the compiler vectorises for the TU's flags;
// the float64 accumulators are explicit lanes and floating-point contraction is off in the SIMD
// TUs (CMakeLists.txt), so every path gives the same bits. Everything here has internal linkage:
// no AVX-compiled copy can be picked by the linker for the portable path.
#pragma once
#include <cmath>
#include <cstdint>

#include "nnperf/kernels/batchnorm.h"

namespace nnperf::detail {
namespace {

constexpr int kLanes = 8;

// Sum of f(i) over one plane in kLanes float64 accumulators, added up in a fixed order.
template <class F>
double plane_sum(int64_t n, F f) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += f(i + l);
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] += f(i);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Channel c of the training forward: batch mean, biased variance (two passes), the saved and
// running statistics, then y.
void train_forward_channel(const BatchNormTrainArgs& a, int64_t c) {
  const BatchNormShape& s = a.shape;
  const double count = static_cast<double>(s.mb * s.plane);
  double sum = 0.0;
  for (int64_t n = 0; n < s.mb; ++n) {
    const float* xp = a.x + (n * s.channels + c) * s.plane;
    sum += plane_sum(s.plane, [xp](int64_t i) { return static_cast<double>(xp[i]); });
  }
  const double mean = sum / count;
  double sq = 0.0;
  for (int64_t n = 0; n < s.mb; ++n) {
    const float* xp = a.x + (n * s.channels + c) * s.plane;
    sq += plane_sum(s.plane, [xp, mean](int64_t i) {
      const double d = xp[i] - mean;
      return d * d;
    });
  }
  const double var = sq / count;
  const double inv = 1.0 / std::sqrt(var + a.eps);
  a.save_mean[c] = mean;
  a.save_inv[c] = inv;
  a.running_mean[c] =
      static_cast<float>((1.0 - a.momentum) * a.running_mean[c] + a.momentum * mean);
  a.running_var[c] = static_cast<float>((1.0 - a.momentum) * a.running_var[c] +
                                        a.momentum * var * count / (count - 1.0));
  // y = (x - mean) * s + beta in float64: a large mean does not cancel away the spread.
  const double sc = a.gamma[c] * inv, beta = a.beta[c];
  for (int64_t n = 0; n < s.mb; ++n) {
    const float* xp = a.x + (n * s.channels + c) * s.plane;
    float* yp = a.y + (n * s.channels + c) * s.plane;
    for (int64_t i = 0; i < s.plane; ++i) yp[i] = static_cast<float>((xp[i] - mean) * sc + beta);
  }
}

// Channel c of the backward: d_gamma and d_beta (sum dy, then sum dy * (x - mean): two passes
// over each plane measured faster than one pass with both sums, which vectorises worse), then dx
// unless it is null.
void backward_channel(const BatchNormBackwardArgs& a, int64_t c) {
  const BatchNormShape& s = a.shape;
  const double count = static_cast<double>(s.mb * s.plane);
  const double mean = a.save_mean[c], inv = a.save_inv[c];
  double sum_dy = 0.0, sum_dy_x = 0.0;
  for (int64_t n = 0; n < s.mb; ++n) {
    const float* xp = a.x + (n * s.channels + c) * s.plane;
    const float* dyp = a.dy + (n * s.channels + c) * s.plane;
    sum_dy += plane_sum(s.plane, [dyp](int64_t i) { return static_cast<double>(dyp[i]); });
    sum_dy_x += plane_sum(s.plane, [xp, dyp, mean](int64_t i) {
      return static_cast<double>(dyp[i]) * (xp[i] - mean);
    });
  }
  const double sum_dy_xhat = sum_dy_x * inv;
  a.d_gamma[c] = static_cast<float>(sum_dy_xhat);
  a.d_beta[c] = static_cast<float>(sum_dy);
  if (a.dx == nullptr) return;
  // dx = k * (dy - mean_dy - (x - mean) * inv * mean_dy_xhat), in float64 (x - mean keeps its
  // precision when the mean is large against the spread).
  const double k = a.gamma[c] * inv;
  const double mean_dy = sum_dy / count, mean_dy_xhat = sum_dy_xhat / count;
  const double p = -k * inv * mean_dy_xhat, q = -k * mean_dy;
  for (int64_t n = 0; n < s.mb; ++n) {
    const float* xp = a.x + (n * s.channels + c) * s.plane;
    const float* dyp = a.dy + (n * s.channels + c) * s.plane;
    float* dxp = a.dx + (n * s.channels + c) * s.plane;
    for (int64_t i = 0; i < s.plane; ++i) {
      dxp[i] = static_cast<float>(k * dyp[i] + p * (xp[i] - mean) + q);
    }
  }
}

// Rows r0 <= r < r1 of the inference map y = x * scale[c] + shift[c] (r = n * C + c).
void apply_rows(const BatchNormShape& s, const float* x, const float* scale, const float* shift,
                float* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float sc = scale[r % s.channels], sh = shift[r % s.channels];
    const float* xr = x + r * s.plane;
    float* yr = y + r * s.plane;
    for (int64_t i = 0; i < s.plane; ++i) yr[i] = xr[i] * sc + sh;
  }
}

}  // namespace
}  // namespace nnperf::detail
