// BatchNorm's per-channel training loops (batchnorm.h), compiled once per instruction set:
// batchnorm.cc (any x86-64), batchnorm_avx2.cc and batchnorm_avx512.cc, each exporting its
// BatchNormPaths (batchnorm_internal.h). Plain loops the compiler vectorises for the TU's flags;
// the float64 accumulators are explicit lanes and floating-point contraction is off in the SIMD
// TUs (CMakeLists.txt), so every path gives the same bits. Everything here has internal linkage:
// no AVX-compiled copy can be picked by the linker for the portable path.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "nnperf/kernels/batchnorm.h"
#include "nnperf/kernels/batchnorm_internal.h"

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

// BatchNorm's output, rounded to float (before the ReLU where one is fused). `scale` is gamma *
// inv, `shift` beta.
inline float normalised(float x, double mean, double scale, double shift) {
  return static_cast<float>((x - mean) * scale + shift);
}
// The fused ReLU: max(0, t) as the activation table's ReLU computes it (maxps(0, t): a NaN and a
// -0 pass through).
inline float fused_relu(float t) { return t < 0.0f ? 0.0f : t; }
// The fused ReLU's backward on dy, y being its output: dy where y > 0, else 0. The same as the
// table's, which tests the ReLU's input t: y = max(0, t) is positive exactly where t is (a NaN
// stays a NaN). A bitwise select: as `y > 0 ? dy : 0` GCC kept a branch in the block loops and
// vectorised none of them (the fused backward took 10x the plain one).
inline float fused_relu_grad(float y, float dy) {
  const uint32_t keep = 0u - static_cast<uint32_t>(y > 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(dy) & keep);
}

// Channel c of the training forward: batch mean, biased variance (two passes), the saved and
// running statistics, then y (through a ReLU with a.relu).
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
    if (a.relu) {
      for (int64_t i = 0; i < s.plane; ++i) yp[i] = fused_relu(normalised(xp[i], mean, sc, beta));
    } else {
      for (int64_t i = 0; i < s.plane; ++i) yp[i] = normalised(xp[i], mean, sc, beta);
    }
  }
}

// The gradient at BatchNorm's output, value i: dy[i], or through the fused ReLU whose output y
// is (y is read only then).
template <bool Relu>
inline float grad_at(const float* dy, const float* y, int64_t i) {
  if constexpr (Relu) {
    return fused_relu_grad(y[i], dy[i]);
  } else {
    return dy[i];
  }
}

// Channel c of the backward: d_gamma and d_beta (sum dy, then sum dy * (x - mean): two passes
// over each plane measured faster than one pass with both sums, which vectorises worse), then dx
// unless it is null. With a.relu, dy is first masked by the fused ReLU (grad_at).
template <bool Relu>
void backward_channel_as(const BatchNormBackwardArgs& a, int64_t c) {
  const BatchNormShape& s = a.shape;
  const double count = static_cast<double>(s.mb * s.plane);
  const double mean = a.save_mean[c], inv = a.save_inv[c];
  // With the ReLU and a dx: the masked dy is written to dx on the first pass and read from there
  // (the channel's planes stay in L2 between the passes), so the later passes read one array
  // where they would read dy and y and mask again.
  const bool masked_in_dx = Relu && a.dx != nullptr;
  double sum_dy = 0.0, sum_dy_x = 0.0;
  for (int64_t n = 0; n < s.mb; ++n) {
    const int64_t at = (n * s.channels + c) * s.plane;
    const float* xp = a.x + at;
    if (masked_in_dx) {
      float* gp = a.dx + at;
      sum_dy += plane_sum(s.plane, [gp, dyp = a.dy + at, yp = a.y + at](int64_t i) {
        const float g = fused_relu_grad(yp[i], dyp[i]);
        gp[i] = g;
        return static_cast<double>(g);
      });
      sum_dy_x += plane_sum(s.plane, [xp, mean, gp](int64_t i) {
        return static_cast<double>(gp[i]) * (xp[i] - mean);
      });
      continue;
    }
    const auto grad = [dyp = a.dy + at, yp = Relu ? a.y + at : nullptr](int64_t i) {
      return grad_at<Relu>(dyp, yp, i);
    };
    sum_dy += plane_sum(s.plane, [grad](int64_t i) { return static_cast<double>(grad(i)); });
    sum_dy_x += plane_sum(s.plane, [xp, mean, grad](int64_t i) {
      return static_cast<double>(grad(i)) * (xp[i] - mean);
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
    const int64_t at = (n * s.channels + c) * s.plane;
    const float* xp = a.x + at;
    float* dxp = a.dx + at;
    if (masked_in_dx) {
      for (int64_t i = 0; i < s.plane; ++i) {
        dxp[i] = static_cast<float>(k * dxp[i] + p * (xp[i] - mean) + q);
      }
      continue;
    }
    const float* dyp = a.dy + at;
    for (int64_t i = 0; i < s.plane; ++i) {
      dxp[i] = static_cast<float>(k * dyp[i] + p * (xp[i] - mean) + q);
    }
  }
}

void backward_channel(const BatchNormBackwardArgs& a, int64_t c) {
  if (a.relu) {
    backward_channel_as<true>(a, c);
  } else {
    backward_channel_as<false>(a, c);
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

// ---- small planes: whole channels side by side ----
// With a plane of a few values (ResNet's last stages: 7x7 at 224, 1x1 at 32) the loops above
// spend their time on each plane's loop and reduction and on strided reads. These take a block of
// whole channels [c0, c1), at most kBlockValues values of each image (channels * plane), and walk
// each image's row of the block: one float64 accumulator per value, summed over the images in
// image order, then each channel's plane added up in order. The arithmetic per value is the
// per-channel loops' (float64, the same formulas); only the order of the sums differs, and it does
// not depend on how the channels are split into blocks or threads.
constexpr int64_t kBlockValues = kBatchNormBlockValues;

// N sums per value k < values over the images, each added in image order: acc[i][k] starts at 0,
// then add(t, n, k) adds image n's terms for value k into t[0..N). `Images` images per sweep over
// k keep the partial sums in registers across them (the order of the additions is the same
// whatever their number).
template <int N, int Images = 4, class Add>
void sums_over_images(int64_t mb, int64_t values, double* const (&acc)[N], Add add) {
  for (int i = 0; i < N; ++i) std::fill(acc[i], acc[i] + values, 0.0);
  const auto sweep = [&](int64_t n0, int images) {
    for (int64_t k = 0; k < values; ++k) {
      double t[N];
      for (int i = 0; i < N; ++i) t[i] = acc[i][k];
      for (int u = 0; u < images; ++u) add(t, n0 + u, k);
      for (int i = 0; i < N; ++i) acc[i][k] = t[i];
    }
  };
  int64_t n = 0;
  for (; n + Images <= mb; n += Images) sweep(n, Images);
  for (; n < mb; ++n) sweep(n, 1);
}

// The sum of channel j's plane in acc (plane_sum's lanes and order).
double plane_total(const double* acc, int64_t plane, int64_t j) {
  const double* a = acc + j * plane;
  return plane_sum(plane, [a](int64_t i) { return a[i]; });
}

// Sets channel j's plane of e to v.
void spread(double* e, int64_t plane, int64_t j, double v) {
  for (int64_t i = 0; i < plane; ++i) e[j * plane + i] = v;
}

// Channels [c0, c1) of the training forward, (c1 - c0) * plane <= kBlockValues.
void train_forward_block(const BatchNormTrainArgs& a, int64_t c0, int64_t c1) {
  const BatchNormShape& s = a.shape;
  const int64_t p = s.plane, values = (c1 - c0) * p, row = s.channels * p;
  const double count = static_cast<double>(s.mb * p);
  const float* x = a.x + c0 * p;
  float* y = a.y + c0 * p;
  double acc[kBlockValues], mean[kBlockValues], scale[kBlockValues];
  sums_over_images<1>(s.mb, values, {acc}, [x, row](double* t, int64_t n, int64_t k) {
    t[0] += static_cast<double>(x[n * row + k]);
  });
  for (int64_t j = 0; j < c1 - c0; ++j) spread(mean, p, j, plane_total(acc, p, j) / count);
  sums_over_images<1>(s.mb, values, {acc}, [x, row, &mean](double* t, int64_t n, int64_t k) {
    const double d = x[n * row + k] - mean[k];
    t[0] += d * d;
  });
  for (int64_t j = 0; j < c1 - c0; ++j) {
    const int64_t c = c0 + j;
    const double m = mean[j * p], var = plane_total(acc, p, j) / count;
    const double inv = 1.0 / std::sqrt(var + a.eps);
    a.save_mean[c] = m;
    a.save_inv[c] = inv;
    a.running_mean[c] = static_cast<float>((1.0 - a.momentum) * a.running_mean[c] + a.momentum * m);
    a.running_var[c] = static_cast<float>((1.0 - a.momentum) * a.running_var[c] +
                                          a.momentum * var * count / (count - 1.0));
    spread(scale, p, j, a.gamma[c] * inv);
    spread(acc, p, j, a.beta[c]);
  }
  for (int64_t n = 0; n < s.mb; ++n) {
    const float* xr = x + n * row;
    float* yr = y + n * row;
    if (a.relu) {
      for (int64_t k = 0; k < values; ++k)
        yr[k] = fused_relu(normalised(xr[k], mean[k], scale[k], acc[k]));
    } else {
      for (int64_t k = 0; k < values; ++k) yr[k] = normalised(xr[k], mean[k], scale[k], acc[k]);
    }
  }
}

// Channels [c0, c1) of the backward, (c1 - c0) * plane <= kBlockValues. With the fused ReLU
// (Relu), dy is masked by it: with a dx (Masked) once, into dx, which the sums and the dx loop
// then read as BatchNorm's backward alone reads dy; without one on every read.
template <bool Relu, bool Masked>
void backward_block_as(const BatchNormBackwardArgs& a, int64_t c0, int64_t c1) {
  static_assert(Relu || !Masked);
  const BatchNormShape& s = a.shape;
  const int64_t p = s.plane, values = (c1 - c0) * p, row = s.channels * p;
  const double count = static_cast<double>(s.mb * p);
  const float* x = a.x + c0 * p;
  const float* dy = a.dy + c0 * p;
  const float* y = Relu ? a.y + c0 * p : nullptr;
  if constexpr (Masked) {
    float* g = a.dx + c0 * p;
    for (int64_t n = 0; n < s.mb; ++n) {
      for (int64_t k = 0; k < values; ++k) {
        g[n * row + k] = fused_relu_grad(y[n * row + k], dy[n * row + k]);
      }
    }
    dy = g;
  }
  constexpr bool kMaskHere = Relu && !Masked;  // the ReLU's mask applied on every read
  double mean[kBlockValues], sum_dy[kBlockValues], sum_dy_x[kBlockValues], q[kBlockValues];
  for (int64_t j = 0; j < c1 - c0; ++j) spread(mean, p, j, a.save_mean[c0 + j]);
  // Both sums in one sweep over the images. Masking on every read (no dx), two images per sweep:
  // when this was also the path with a dx, four made it 1.09-1.26x BatchNorm's and the ReLU's
  // passes apart on planes of 4 to 256 values at batch 32 (bench/batchnorm_bench, one Zen 4
  // core), two 0.76-0.94x on planes of 1 to 16 (1.05-1.13x at 64 and 256). Masking into dx first
  // measured 0.87-0.96x of two's time on ResNet-18's planes of 4 to 1024 values (1.09x on 784
  // values at batch 8), so it is the path with a dx.
  sums_over_images<2, kMaskHere ? 2 : 4>(s.mb, values, {sum_dy, sum_dy_x},
                                         [x, dy, y, row, &mean](double* t, int64_t n, int64_t k) {
                                           const double g = grad_at<kMaskHere>(dy, y, n * row + k);
                                           t[0] += g;
                                           t[1] += g * (x[n * row + k] - mean[k]);
                                         });
  // dx = k * dy + p * (x - mean) + q per channel (the per-channel loops' terms), spread over the
  // plane in place of the sums once they are added up.
  for (int64_t j = 0; j < c1 - c0; ++j) {
    const int64_t c = c0 + j;
    const double inv = a.save_inv[c];
    const double total_dy = plane_total(sum_dy, p, j);
    const double total_dy_xhat = plane_total(sum_dy_x, p, j) * inv;
    a.d_gamma[c] = static_cast<float>(total_dy_xhat);
    a.d_beta[c] = static_cast<float>(total_dy);
    if (a.dx == nullptr) continue;
    const double k = a.gamma[c] * inv;
    spread(sum_dy, p, j, k);
    spread(sum_dy_x, p, j, -k * inv * (total_dy_xhat / count));
    spread(q, p, j, -k * (total_dy / count));
  }
  if (a.dx == nullptr) return;
  float* dx = a.dx + c0 * p;
  for (int64_t n = 0; n < s.mb; ++n) {
    const float* xr = x + n * row;
    float* dxr = dx + n * row;
    if constexpr (Masked) {  // dx holds the masked dy: one pointer, read then written
      for (int64_t k = 0; k < values; ++k) {
        dxr[k] = static_cast<float>(sum_dy[k] * dxr[k] + sum_dy_x[k] * (xr[k] - mean[k]) + q[k]);
      }
    } else {
      for (int64_t k = 0; k < values; ++k) {
        dxr[k] = static_cast<float>(sum_dy[k] * grad_at<Relu>(dy, y, n * row + k) +
                                    sum_dy_x[k] * (xr[k] - mean[k]) + q[k]);
      }
    }
  }
}

void backward_block(const BatchNormBackwardArgs& a, int64_t c0, int64_t c1) {
  if (a.relu && a.dx != nullptr) {
    backward_block_as<true, true>(a, c0, c1);
  } else if (a.relu) {
    backward_block_as<true, false>(a, c0, c1);
  } else {
    backward_block_as<false, false>(a, c0, c1);
  }
}

// Images n0 <= n < n1 of the inference map with the scale and shift spread over each plane
// (channels * plane values each): apply_rows's arithmetic, one loop per image.
void apply_images(const BatchNormShape& s, const float* x, const float* scale_values,
                  const float* shift_values, float* y, int64_t n0, int64_t n1) {
  const int64_t row = s.channels * s.plane;
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * row;
    float* yr = y + n * row;
    for (int64_t k = 0; k < row; ++k) yr[k] = xr[k] * scale_values[k] + shift_values[k];
  }
}

}  // namespace
}  // namespace nnperf::detail
