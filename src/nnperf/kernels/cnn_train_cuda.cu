// The CNN-training kernels of kernels/cuda_kernels.h. BatchNorm: one block per channel, float64
// sums (two passes: the mean, then centred squares; for the backward, sum dy and dy * (x - mean))
// reduced in shared memory, then the elementwise map in float64 as batchnorm.cc does. Pool
// backward passes gather instead of scatter: each input element adds, in output order, the
// gradients of the outputs that chose it (max) or whose window holds it (average), the order the
// CPU loops add them in, so the results equal the CPU's without atomics.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nnperf/kernels/counter_rng.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/cuda_launch.cuh"

namespace nnperf::cuda_kernels {

namespace {

using detail::avg_divisor;
using detail::first_index;
using detail::grid_stride;
using detail::kBlock;
using detail::launch_blocks;
using detail::launch_over;

// Sum of v over the block's threads (kBlock of them), in shared memory; every thread gets it.
__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = kBlock / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();
  return total;
}

// Element i (0 .. mb*plane) of channel c.
__device__ int64_t at(const BatchNormShape& s, int64_t c, int64_t i) {
  return ((i / s.plane) * s.channels + c) * s.plane + i % s.plane;
}

__global__ void bn_forward_kernel(BatchNormShape s, const float* x, float* y, const float* gamma,
                                  const float* beta, double eps, double momentum,
                                  float* running_mean, float* running_var, double* save_mean,
                                  double* save_inv) {
  __shared__ double shared[kBlock];
  const int64_t c = blockIdx.x, count = s.mb * s.plane;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) sum += x[at(s, c, i)];
  const double mean = block_sum(sum, shared) / static_cast<double>(count);
  double sq = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    const double d = x[at(s, c, i)] - mean;
    sq += d * d;
  }
  const double var = block_sum(sq, shared) / static_cast<double>(count);
  const double inv = 1.0 / sqrt(var + eps);
  if (threadIdx.x == 0) {
    save_mean[c] = mean;
    save_inv[c] = inv;
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean);
    const double unbiased = count > 1 ? var * count / (count - 1.0) : var;
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] + momentum * unbiased);
  }
  const double sc = gamma[c] * inv, b = beta[c];
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    const int64_t k = at(s, c, i);
    y[k] = static_cast<float>((x[k] - mean) * sc + b);
  }
}

__global__ void bn_backward_kernel(BatchNormShape s, const float* x, const float* dy, float* dx,
                                   const float* gamma, const double* save_mean,
                                   const double* save_inv, float* d_gamma, float* d_beta) {
  __shared__ double shared[kBlock];
  const int64_t c = blockIdx.x, count = s.mb * s.plane;
  const double mean = save_mean[c], inv = save_inv[c];
  double sum_dy = 0.0, sum_dy_x = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    const int64_t k = at(s, c, i);
    sum_dy += dy[k];
    sum_dy_x += static_cast<double>(dy[k]) * (x[k] - mean);
  }
  sum_dy = block_sum(sum_dy, shared);
  const double sum_dy_xhat = block_sum(sum_dy_x, shared) * inv;
  if (threadIdx.x == 0) {
    d_gamma[c] = static_cast<float>(sum_dy_xhat);
    d_beta[c] = static_cast<float>(sum_dy);
  }
  if (dx == nullptr) return;
  const double k = gamma[c] * inv;
  const double p = -k * inv * (sum_dy_xhat / static_cast<double>(count));
  const double q = -k * (sum_dy / static_cast<double>(count));
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    const int64_t e = at(s, c, i);
    dx[e] = static_cast<float>(k * dy[e] + p * (x[e] - mean) + q);
  }
}

__global__ void maxpool_argmax_kernel(PoolShape s, const float* x, float* y, int32_t* argmax) {
  const int64_t n = s.planes * s.oh * s.ow;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, plane = i / (s.ow * s.oh);
    const int64_t h0 = oy * s.s - s.p, w0 = ox * s.s - s.p;
    const float* xp = x + plane * s.ih * s.iw;
    float best = -INFINITY;
    int64_t arg = -1;
    // pool.h's rule: start at the window's first element, take v when v > best or v is NaN
    // (so the first maximum wins, and the last NaN).
    for (int64_t iy = max(h0, int64_t{0}); iy < min(h0 + s.k, s.ih); ++iy) {
      for (int64_t ix = max(w0, int64_t{0}); ix < min(w0 + s.k, s.iw); ++ix) {
        const float v = xp[iy * s.iw + ix];
        if (arg < 0) arg = iy * s.iw + ix;
        if (v > best || isnan(v)) {
          best = v;
          arg = iy * s.iw + ix;
        }
      }
    }
    y[i] = best;
    argmax[i] = static_cast<int32_t>(arg);
  }
}

// The outputs whose (unclipped) window holds input row iy: oy in [lo, hi].
__device__ void window_range(int64_t i, int64_t k, int64_t stride, int64_t pad, int64_t out,
                             int64_t& lo, int64_t& hi) {
  const int64_t a = i + pad - k + 1;  // oy * stride >= a
  lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  hi = min((i + pad) / stride, out - 1);
}

__global__ void maxpool_backward_kernel(PoolShape s, const float* dy, const int32_t* argmax,
                                        float* dx) {
  const int64_t n = s.planes * s.ih * s.iw;
  for (int64_t e = first_index(); e < n; e += grid_stride()) {
    const int64_t ix = e % s.iw, iy = (e / s.iw) % s.ih, plane = e / (s.iw * s.ih);
    int64_t y0, y1, x0, x1;
    window_range(iy, s.k, s.s, s.p, s.oh, y0, y1);
    window_range(ix, s.k, s.s, s.p, s.ow, x0, x1);
    const int32_t self = static_cast<int32_t>(iy * s.iw + ix);
    float g = 0.0f;
    for (int64_t oy = y0; oy <= y1; ++oy) {
      for (int64_t ox = x0; ox <= x1; ++ox) {
        const int64_t o = (plane * s.oh + oy) * s.ow + ox;
        if (argmax[o] == self) g += dy[o];
      }
    }
    dx[e] = g;
  }
}

__global__ void avgpool_backward_kernel(PoolShape s, bool count_include_pad, const float* dy,
                                        float* dx) {
  const int64_t n = s.planes * s.ih * s.iw;
  for (int64_t e = first_index(); e < n; e += grid_stride()) {
    const int64_t ix = e % s.iw, iy = (e / s.iw) % s.ih, plane = e / (s.iw * s.ih);
    int64_t y0, y1, x0, x1;
    window_range(iy, s.k, s.s, s.p, s.oh, y0, y1);
    window_range(ix, s.k, s.s, s.p, s.ow, x0, x1);
    float g = 0.0f;
    for (int64_t oy = y0; oy <= y1; ++oy) {
      for (int64_t ox = x0; ox <= x1; ++ox) {
        const int64_t div = avg_divisor(s, count_include_pad, oy, ox);
        if (div > 0) g += dy[(plane * s.oh + oy) * s.ow + ox] / static_cast<float>(div);
      }
    }
    dx[e] = g;
  }
}

__global__ void adaptive_avgpool_backward_kernel(PoolShape s, const float* dy, float* dx) {
  const int64_t n = s.planes * s.ih * s.iw;
  for (int64_t e = first_index(); e < n; e += grid_stride()) {
    const int64_t ix = e % s.iw, iy = (e / s.iw) % s.ih, plane = e / (s.iw * s.ih);
    float g = 0.0f;
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      const int64_t h0 = (oy * s.ih) / s.oh, h1 = ((oy + 1) * s.ih + s.oh - 1) / s.oh;
      if (iy < h0 || iy >= h1) continue;
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const int64_t w0 = (ox * s.iw) / s.ow, w1 = ((ox + 1) * s.iw + s.ow - 1) / s.ow;
        if (ix < w0 || ix >= w1) continue;
        g += dy[(plane * s.oh + oy) * s.ow + ox] / static_cast<float>((h1 - h0) * (w1 - w0));
      }
    }
    dx[e] = g;
  }
}

__global__ void copy_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = x[i];
}

__global__ void dropout_kernel(const float* x, float* y, float* mask, int64_t n, float keep,
                               uint64_t seed, uint64_t offset) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float m = dropout_mask_entry(seed, offset + static_cast<uint64_t>(i), keep);
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

__global__ void multiply_kernel(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = a[i] * b[i];
}

__global__ void clamp_backward_kernel(const float* x, const float* dy, float* dx, int64_t n,
                                      float lo, float hi) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    dx[i] = (x[i] > lo && x[i] < hi) ? dy[i] : 0.0f;
}

__global__ void slice_kernel(const float* full, int64_t mb, int64_t part_per_image,
                             int64_t full_per_image, int64_t offset, float* part) {
  const int64_t n = mb * part_per_image;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    part[i] = full[(i / part_per_image) * full_per_image + offset + i % part_per_image];
  }
}

__global__ void channel_sum_kernel(BatchNormShape s, const float* dy, float* db) {
  __shared__ double shared[kBlock];
  const int64_t c = blockIdx.x, count = s.mb * s.plane;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) sum += dy[at(s, c, i)];
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) db[c] = static_cast<float>(sum);
}

}  // namespace

void copy(const float* x, float* y, int64_t n) { launch_over(n, "copy", copy_kernel, x, y, n); }

void dropout_forward(const float* x, float* y, float* mask, int64_t n, float keep, uint64_t seed,
                     uint64_t offset) {
  launch_over(n, "dropout", dropout_kernel, x, y, mask, n, keep, seed, offset);
}

void multiply(const float* a, const float* b, float* y, int64_t n) {
  launch_over(n, "multiply", multiply_kernel, a, b, y, n);
}

void clamp_backward(const float* x, const float* dy, float* dx, int64_t n, float lo, float hi) {
  launch_over(n, "clamp backward", clamp_backward_kernel, x, dy, dx, n, lo, hi);
}

void concat_slice(const float* full, int64_t mb, int64_t part_per_image, int64_t full_per_image,
                  int64_t offset, float* part) {
  launch_over(mb * part_per_image, "concat slice", slice_kernel, full, mb, part_per_image,
              full_per_image, offset, part);
}

void channel_sum(const BatchNormShape& s, const float* dy, float* db) {
  launch_blocks(s.channels, "channel sum", channel_sum_kernel, s, dy, db);
}

void batchnorm_train_forward(const BatchNormTrainArgs& a) {
  const BatchNormShape& s = a.shape;
  launch_blocks(s.mb * s.plane > 0 ? s.channels : 0, "batchnorm forward", bn_forward_kernel, s, a.x,
                a.y, a.gamma, a.beta, a.eps, a.momentum, a.running_mean, a.running_var, a.save_mean,
                a.save_inv);
}

void batchnorm_backward(const BatchNormBackwardArgs& a) {
  const BatchNormShape& s = a.shape;
  launch_blocks(s.mb * s.plane > 0 ? s.channels : 0, "batchnorm backward", bn_backward_kernel, s,
                a.x, a.dy, a.dx, a.gamma, a.save_mean, a.save_inv, a.d_gamma, a.d_beta);
}

void maxpool2d_forward_argmax(const PoolShape& s, const float* x, float* y, int32_t* argmax) {
  launch_over(s.planes * s.oh * s.ow, "max pool (argmax)", maxpool_argmax_kernel, s, x, y, argmax);
}

void maxpool2d_backward(const PoolShape& s, const float* dy, const int32_t* argmax, float* dx) {
  launch_over(s.planes * s.ih * s.iw, "max pool backward", maxpool_backward_kernel, s, dy, argmax,
              dx);
}

void avgpool2d_backward(const PoolShape& s, bool count_include_pad, const float* dy, float* dx) {
  launch_over(s.planes * s.ih * s.iw, "average pool backward", avgpool_backward_kernel, s,
              count_include_pad, dy, dx);
}

void adaptive_avgpool2d_backward(const PoolShape& s, const float* dy, float* dx) {
  launch_over(s.planes * s.ih * s.iw, "adaptive average pool backward",
              adaptive_avgpool_backward_kernel, s, dy, dx);
}

}  // namespace nnperf::cuda_kernels
