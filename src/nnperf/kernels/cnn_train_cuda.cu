// The CNN-training kernels of kernels/cuda_kernels.h. BatchNorm and the per-channel sum: float64
// sums per channel (one pass over x for the forward: sums of x - K and (x - K)^2 with K the
// channel's first element, so that the variance E[(x-K)^2] - E[x-K]^2 cancels no more than the
// spread of the data itself; for the backward, sum dy and dy * (x - mean)), each channel split
// over several blocks (bn_splits) whose partial sums land in a scratch buffer and are added in
// split order (the same result every run), then a kernel per channel for the statistics and one
// thread per element (or per four, through float4, where planes hold a multiple of four) for the
// map, in float64 as the CPU kernel does (batchnorm_impl.h). (A block per channel would leave
// ResNet-50's 64-channel layers at batch 32 on 64 blocks of a 132-SM GPU.) Pool backward passes
// gather instead of scatter: each input element adds, in output order, the gradients of the outputs
// that chose it (max) or whose window holds it (average), the order the CPU loops add them in, so
// the results equal the CPU's without atomics.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/counter_rng.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/cuda_launch.cuh"

namespace nnperf::cuda_kernels {

namespace {

using detail::avg_divisor;
using detail::bn_splits;
using detail::first_index;
using detail::grid_stride;
using detail::kBlock;
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

// The grid of the partial-sum kernels: blockIdx.x the split, blockIdx.y the channel (at most
// 65535 channels: a launch beyond is refused by CUDA, and reported).
dim3 split_grid(const BatchNormShape& s, int splits) {
  return dim3(static_cast<unsigned>(splits), static_cast<unsigned>(s.channels));
}

// The elements of channel c in this block's split (blockIdx.x) that this thread visits
// (cuda_index.h's walk): f(offset in the NCHW tensor).
template <typename F>
__device__ void walk_split(const BatchNormShape& s, int64_t c, int splits, F f) {
  detail::walk_split(s, c, splits, blockIdx.x, threadIdx.x, f);
}

// Channel c's sum over its splits' partials (entry `part` of `width` per split), in split order.
__device__ double split_total(const double* partial, int64_t c, int splits, int width, int part) {
  double t = 0.0;
  for (int k = 0; k < splits; ++k) t += partial[(c * splits + k) * width + part];
  return t;
}

// Grid (splits, channels): each block's sum of x over its split, partial[c * splits + k].
__global__ void channel_partial_sums(BatchNormShape s, int splits, const float* x,
                                     double* partial) {
  __shared__ double shared[kBlock];
  const int64_t c = blockIdx.y;
  double sum = 0.0;
  walk_split(s, c, splits, [&](int64_t e) { sum += x[e]; });
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) partial[c * splits + blockIdx.x] = sum;
}

// The same grid: each block's sums of d = x - K and of d^2 over its split, K the channel's first
// element (image 0, position 0), in partial[2 * (c * splits + k)] and the entry after it.
__global__ void shifted_partial_sums(BatchNormShape s, int splits, const float* x,
                                     double* partial) {
  __shared__ double shared[kBlock];
  const int64_t c = blockIdx.y;
  const double shift = x[c * s.plane];
  double sum = 0.0, sq = 0.0;
  walk_split(s, c, splits, [&](int64_t e) {
    const double d = x[e] - shift;
    sum += d;
    sq += d * d;
  });
  sum = block_sum(sum, shared);
  sq = block_sum(sq, shared);
  if (threadIdx.x == 0) {
    partial[2 * (c * splits + blockIdx.x)] = sum;
    partial[2 * (c * splits + blockIdx.x) + 1] = sq;
  }
}

// One thread per channel: the batch mean and biased variance (from shifted_partial_sums'
// partials), 1/sqrt(var + eps), the running statistics (unbiased variance) updated in place.
__global__ void bn_statistics(BatchNormShape s, int splits, const float* x, const double* partial,
                              double eps, double momentum, float* running_mean, float* running_var,
                              double* save_mean, double* save_inv) {
  const int64_t count = s.mb * s.plane;
  for (int64_t c = first_index(); c < s.channels; c += grid_stride()) {
    const double shifted_mean = split_total(partial, c, splits, 2, 0) / static_cast<double>(count);
    const double mean = x[c * s.plane] + shifted_mean;
    const double var = fmax(split_total(partial, c, splits, 2, 1) / static_cast<double>(count) -
                                shifted_mean * shifted_mean,
                            0.0);
    save_mean[c] = mean;
    save_inv[c] = 1.0 / sqrt(var + eps);
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean);
    const double unbiased = count > 1 ? var * count / (count - 1.0) : var;
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] + momentum * unbiased);
  }
}

// One thread per channel: db[c] = the channel's total (channel_sum).
__global__ void channel_totals(int64_t channels, int splits, const double* partial, float* db) {
  for (int64_t c = first_index(); c < channels; c += grid_stride())
    db[c] = static_cast<float>(split_total(partial, c, splits, 1, 0));
}

// y = (x - mean) * gamma * inv + beta, in float64.
__device__ inline float bn_map(float x, double mean, double scale, double beta) {
  return static_cast<float>((x - mean) * scale + beta);
}

// f(i, c) for each index i < n this thread visits in a grid-stride loop, c its channel (of
// `channels`, `plane` indices each); `I` the index type (uint32_t when every index fits in 31
// bits: a 32-bit division for the channel).
template <typename I, typename F>
__device__ void each_with_channel(I n, I plane, I channels, F f) {
  const I stride = static_cast<I>(gridDim.x) * blockDim.x;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    f(i, detail::channel_of(i, plane, channels));
}

// bn_map per element.
template <typename I>
__global__ void bn_normalize(I n, I plane, I channels, const float* x, float* y, const float* gamma,
                             const float* beta, const double* mean, const double* inv) {
  each_with_channel(n, plane, channels,
                    [&](I i, I c) { y[i] = bn_map(x[i], mean[c], gamma[c] * inv[c], beta[c]); });
}

// The same four elements at a time: n groups of four, plane / 4 groups per plane.
template <typename I>
__global__ void bn_normalize4(I n, I plane, I channels, const float4* x, float4* y,
                              const float* gamma, const float* beta, const double* mean,
                              const double* inv) {
  each_with_channel(n, plane, channels, [&](I i, I c) {
    const double m = mean[c], k = gamma[c] * inv[c], b = beta[c];
    const float4 v = x[i];
    y[i] = make_float4(bn_map(v.x, m, k, b), bn_map(v.y, m, k, b), bn_map(v.z, m, k, b),
                       bn_map(v.w, m, k, b));
  });
}

// Grid (splits, channels): each block's sums of dy and of dy * (x - mean) over its split, in
// partial[2 * (c * splits + k)] and the entry after it.
__global__ void bn_backward_partial_sums(BatchNormShape s, int splits, const float* x,
                                         const float* dy, const double* save_mean,
                                         double* partial) {
  __shared__ double shared[kBlock];
  const int64_t c = blockIdx.y;
  const double mean = save_mean[c];
  double sum_dy = 0.0, sum_dy_x = 0.0;
  walk_split(s, c, splits, [&](int64_t e) {
    sum_dy += dy[e];
    sum_dy_x += static_cast<double>(dy[e]) * (x[e] - mean);
  });
  sum_dy = block_sum(sum_dy, shared);
  sum_dy_x = block_sum(sum_dy_x, shared);
  if (threadIdx.x == 0) {
    partial[2 * (c * splits + blockIdx.x)] = sum_dy;
    partial[2 * (c * splits + blockIdx.x) + 1] = sum_dy_x;
  }
}

// One thread per channel: d_gamma = sum dy * xhat, d_beta = sum dy, and dx's coefficients
// (coef[3c .. 3c+2] = k, p, q of bn_dx, in float64 as the CPU kernel computes them,
// batchnorm_impl.h).
__global__ void bn_backward_statistics(int64_t channels, int splits, double count,
                                       const double* partial, const float* gamma,
                                       const double* save_inv, float* d_gamma, float* d_beta,
                                       double* coef) {
  for (int64_t c = first_index(); c < channels; c += grid_stride()) {
    const double sum_dy = split_total(partial, c, splits, 2, 0);
    const double sum_dy_xhat = split_total(partial, c, splits, 2, 1) * save_inv[c];
    d_gamma[c] = static_cast<float>(sum_dy_xhat);
    d_beta[c] = static_cast<float>(sum_dy);
    const double inv = save_inv[c], k = gamma[c] * inv;
    coef[3 * c] = k;
    coef[3 * c + 1] = -k * inv * (sum_dy_xhat / count);
    coef[3 * c + 2] = -k * (sum_dy / count);
  }
}

// dx = k dy + p (x - mean) + q (the CPU backward, batchnorm_impl.h), k = gamma inv, p = -k inv
// mean(dy xhat), q = -k mean(dy), each channel's k, p, q from bn_backward_statistics.
__device__ inline float bn_dx_of(float x, float dy, double mean, const double* kpq) {
  return static_cast<float>(kpq[0] * dy + kpq[1] * (x - mean) + kpq[2]);
}

// bn_dx_of per element.
template <typename I>
__global__ void bn_dx(I n, I plane, I channels, const float* x, const float* dy, float* dx,
                      const double* save_mean, const double* coef) {
  each_with_channel(n, plane, channels,
                    [&](I i, I c) { dx[i] = bn_dx_of(x[i], dy[i], save_mean[c], coef + 3 * c); });
}

// The same four elements at a time (as bn_normalize4).
template <typename I>
__global__ void bn_dx4(I n, I plane, I channels, const float4* x, const float4* dy, float4* dx,
                       const double* save_mean, const double* coef) {
  each_with_channel(n, plane, channels, [&](I i, I c) {
    const double m = save_mean[c];
    const double* kpq = coef + 3 * c;
    const float4 v = x[i], d = dy[i];
    dx[i] = make_float4(bn_dx_of(v.x, d.x, m, kpq), bn_dx_of(v.y, d.y, m, kpq),
                        bn_dx_of(v.z, d.z, m, kpq), bn_dx_of(v.w, d.w, m, kpq));
  });
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
                               uint64_t seed, uint64_t offset, const uint64_t* steps,
                               uint64_t per_step) {
  if (steps != nullptr) offset += *steps * per_step;
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

// Device scratch for the per-channel partial sums: one buffer per host thread (the stream's
// work is in order, so one call's partials are read before the next writes them), grown to the
// largest need and kept (cuda::Buffer: growing frees the old one, and cudaFree waits for the
// device).
double* scratch(std::size_t doubles) {
  thread_local cuda::Buffer buffer;
  const std::size_t floats = 2 * doubles;  // cudaMalloc's alignment suits doubles
  return reinterpret_cast<double*>(cuda::grow_scratch(buffer, floats));
}

}  // namespace

void copy(const float* x, float* y, int64_t n) { launch_over(n, "copy", copy_kernel, x, y, n); }

void dropout_forward(const float* x, float* y, float* mask, int64_t n, float keep, uint64_t seed,
                     uint64_t offset, const uint64_t* steps, uint64_t per_step) {
  launch_over(n, "dropout", dropout_kernel, x, y, mask, n, keep, seed, offset, steps, per_step);
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
  cuda::ensure_device();
  if (s.channels <= 0) return;
  const int splits = bn_splits(s);
  double* partial = scratch(static_cast<std::size_t>(s.channels * splits));
  if (s.mb * s.plane > 0) {
    channel_partial_sums<<<split_grid(s, splits), kBlock>>>(s, splits, dy, partial);
    detail::launched("channel sum");
  } else {
    cuda::check(cudaMemsetAsync(partial, 0, s.channels * splits * sizeof(double)), "channel sum");
  }
  launch_over(s.channels, "channel sum", channel_totals, s.channels, splits, partial, db);
}

void batchnorm_train_forward(const BatchNormTrainArgs& a) {
  const BatchNormShape& s = a.shape;
  cuda::ensure_device();
  if (s.channels <= 0 || s.mb * s.plane <= 0) return;
  const int splits = bn_splits(s);
  double* partial = scratch(static_cast<std::size_t>(2 * s.channels * splits));
  shifted_partial_sums<<<split_grid(s, splits), kBlock>>>(s, splits, a.x, partial);
  detail::launched("batchnorm forward (sums)");
  launch_over(s.channels, "batchnorm forward (statistics)", bn_statistics, s, splits, a.x, partial,
              a.eps, a.momentum, a.running_mean, a.running_var, a.save_mean, a.save_inv);
  if (s.plane % 4 == 0 && detail::aligned16({a.x, a.y})) {
    detail::launch_per_group_of_four(s, "batchnorm forward", bn_normalize4<uint32_t>,
                                     bn_normalize4<int64_t>, reinterpret_cast<const float4*>(a.x),
                                     reinterpret_cast<float4*>(a.y), a.gamma, a.beta, a.save_mean,
                                     a.save_inv);
  } else {
    detail::launch_per_element(s, "batchnorm forward", bn_normalize<uint32_t>,
                               bn_normalize<int64_t>, a.x, a.y, a.gamma, a.beta, a.save_mean,
                               a.save_inv);
  }
}

void batchnorm_backward(const BatchNormBackwardArgs& a) {
  const BatchNormShape& s = a.shape;
  cuda::ensure_device();
  if (s.channels <= 0 || s.mb * s.plane <= 0) return;
  const int splits = bn_splits(s);
  double* partial = scratch(static_cast<std::size_t>(2 * s.channels * splits + 3 * s.channels));
  double* coef = partial + 2 * s.channels * splits;
  bn_backward_partial_sums<<<split_grid(s, splits), kBlock>>>(s, splits, a.x, a.dy, a.save_mean,
                                                              partial);
  detail::launched("batchnorm backward (sums)");
  launch_over(s.channels, "batchnorm backward (statistics)", bn_backward_statistics, s.channels,
              splits, static_cast<double>(s.mb * s.plane), partial, a.gamma, a.save_inv, a.d_gamma,
              a.d_beta, coef);
  if (a.dx == nullptr) return;
  if (s.plane % 4 == 0 && detail::aligned16({a.x, a.dy, a.dx})) {
    detail::launch_per_group_of_four(s, "batchnorm backward", bn_dx4<uint32_t>, bn_dx4<int64_t>,
                                     reinterpret_cast<const float4*>(a.x),
                                     reinterpret_cast<const float4*>(a.dy),
                                     reinterpret_cast<float4*>(a.dx), a.save_mean, coef);
  } else {
    detail::launch_per_element(s, "batchnorm backward", bn_dx<uint32_t>, bn_dx<int64_t>, a.x, a.dy,
                               a.dx, a.save_mean, coef);
  }
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
