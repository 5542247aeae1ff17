// The CNN-inference kernels of kernels/cuda_kernels.h: one thread per output element, grid-stride
// loops, the windows and divisors of kernels/pool.cc (the same rules, written again for the
// device), sums in float32 in the CPU loops' order (row by row, left to right). The memory-bound
// per-channel affine map and Add move aligned data four floats at a time (float4) and compute
// channel indices in 32-bit arithmetic where the tensor allows (on an H200 at ResNet-50 batch 32, a
// 64-bit division per element held BatchNorm to 1.6 TB/s, where ReLU moved 2.7 and Add 3.1).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/cuda_launch.cuh"

namespace nnperf::cuda_kernels {

namespace {

using detail::avg_divisor;
using detail::first_index;
using detail::grid_stride;
using detail::launch_over;

// y = x * scale[c] + shift[c] (x + shift[c] without a scale; fmaf(x, 1, b) rounds as x + b) with
// `I` the index type: uint32_t when every index fits in 31 bits (a 32-bit division per element
// instead of a 64-bit one), else int64_t.
template <typename I>
__global__ void affine_kernel(I n, I plane, I channels, const float* x, const float* scale,
                              const float* shift, float* y) {
  const I stride = static_cast<I>(gridDim.x) * blockDim.x;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const I c = detail::channel_of(i, plane, channels);
    y[i] = fmaf(x[i], scale != nullptr ? scale[c] : 1.0f, shift[c]);
  }
}

// The same four elements at a time, where a plane holds a multiple of four (so the four share
// their channel), x and y are 16-byte aligned and n < 2^31.
__global__ void affine4_kernel(uint32_t groups, uint32_t plane_groups, uint32_t channels,
                               const float4* x, const float* scale, const float* shift, float4* y) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const uint32_t c = detail::channel_of(g, plane_groups, channels);
    const float a = scale != nullptr ? scale[c] : 1.0f, b = shift[c];
    float4 v = x[g];
    v.x = fmaf(v.x, a, b);
    v.y = fmaf(v.y, a, b);
    v.z = fmaf(v.z, a, b);
    v.w = fmaf(v.w, a, b);
    y[g] = v;
  }
}

// Output element i -> plane, oy, ox and the window clipped to the input (pool_window).
struct Window {
  int64_t plane, oy, ox, h0, h1, w0, w1;
};
__device__ Window window_of(const PoolShape& s, int64_t i) {
  Window w;
  w.ox = i % s.ow;
  w.oy = (i / s.ow) % s.oh;
  w.plane = i / (s.ow * s.oh);
  const int64_t h0 = w.oy * s.s - s.p, w0 = w.ox * s.s - s.p;
  w.h1 = min(h0 + s.k, s.ih);
  w.w1 = min(w0 + s.k, s.iw);
  w.h0 = max(h0, int64_t{0});
  w.w0 = max(w0, int64_t{0});
  return w;
}

__global__ void maxpool_kernel(PoolShape s, const float* x, float* y) {
  const int64_t n = s.planes * s.oh * s.ow;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const Window w = window_of(s, i);
    const float* xp = x + w.plane * s.ih * s.iw;
    float best = -INFINITY;  // padding counts as -inf; the first NaN met stays (PyTorch)
    for (int64_t iy = w.h0; iy < w.h1; ++iy) {
      for (int64_t ix = w.w0; ix < w.w1; ++ix) {
        const float v = xp[iy * s.iw + ix];
        if (v > best || isnan(v)) best = v;
        if (isnan(best)) break;
      }
      if (isnan(best)) break;
    }
    y[i] = best;
  }
}

__global__ void avgpool_kernel(PoolShape s, bool count_include_pad, const float* x, float* y) {
  const int64_t n = s.planes * s.oh * s.ow;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const Window w = window_of(s, i);
    const float* xp = x + w.plane * s.ih * s.iw;
    float sum = 0.0f;
    for (int64_t iy = w.h0; iy < w.h1; ++iy) {
      for (int64_t ix = w.w0; ix < w.w1; ++ix) sum += xp[iy * s.iw + ix];
    }
    const int64_t div = avg_divisor(s, count_include_pad, w.oy, w.ox);
    y[i] = div > 0 ? sum / static_cast<float>(div) : 0.0f;
  }
}

__global__ void adaptive_avgpool_kernel(PoolShape s, const float* x, float* y) {
  const int64_t n = s.planes * s.oh * s.ow;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, plane = i / (s.ow * s.oh);
    const int64_t h0 = (oy * s.ih) / s.oh, h1 = ((oy + 1) * s.ih + s.oh - 1) / s.oh;
    const int64_t w0 = (ox * s.iw) / s.ow, w1 = ((ox + 1) * s.iw + s.ow - 1) / s.ow;
    const float* xp = x + plane * s.ih * s.iw;
    float sum = 0.0f;
    for (int64_t iy = h0; iy < h1; ++iy) {
      for (int64_t ix = w0; ix < w1; ++ix) sum += xp[iy * s.iw + ix];
    }
    y[i] = sum / static_cast<float>((h1 - h0) * (w1 - w0));
  }
}

// A NaN stays NaN, as in the CPU clamp (fmaxf alone would turn it into lo and hide a diverged run).
__global__ void clamp_kernel(const float* x, float* y, int64_t n, float lo, float hi) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = x[i];
    y[i] = v != v ? v : fminf(fmaxf(v, lo), hi);
  }
}

__global__ void add_kernel(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = a[i] + b[i];
}

// The same with a, b and y 16-byte aligned: four at a time.
__global__ void add4_kernel(const float* a, const float* b, float* y, int64_t n) {
  detail::by_groups_of_four(
      n,
      [&](int64_t g) {
        const float4 u = reinterpret_cast<const float4*>(a)[g];
        const float4 v = reinterpret_cast<const float4*>(b)[g];
        reinterpret_cast<float4*>(y)[g] = make_float4(u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w);
      },
      [&](int64_t k) { y[k] = a[k] + b[k]; });
}

__global__ void concat_kernel(const float* src, int64_t mb, int64_t src_per_image, float* dst,
                              int64_t dst_per_image, int64_t offset) {
  const int64_t n = mb * src_per_image;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t image = i / src_per_image;
    dst[image * dst_per_image + offset + i % src_per_image] = src[i];
  }
}

}  // namespace

void channel_affine(const BatchNormShape& s, const float* x, const float* scale, const float* shift,
                    float* y) {
  const int64_t n = s.mb * s.channels * s.plane;
  if (n < (int64_t{1} << 31) && s.plane % 4 == 0 && detail::aligned16({x, y})) {
    launch_over(n / 4, "channel affine", affine4_kernel, static_cast<uint32_t>(n / 4),
                static_cast<uint32_t>(s.plane / 4), static_cast<uint32_t>(s.channels),
                reinterpret_cast<const float4*>(x), scale, shift, reinterpret_cast<float4*>(y));
    return;
  }
  detail::launch_per_element(s, "channel affine", affine_kernel<uint32_t>, affine_kernel<int64_t>,
                             x, scale, shift, y);
}

void maxpool2d_forward(const PoolShape& s, const float* x, float* y) {
  launch_over(s.planes * s.oh * s.ow, "max pool", maxpool_kernel, s, x, y);
}

void avgpool2d_forward(const PoolShape& s, bool count_include_pad, const float* x, float* y) {
  launch_over(s.planes * s.oh * s.ow, "average pool", avgpool_kernel, s, count_include_pad, x, y);
}

void adaptive_avgpool2d_forward(const PoolShape& s, const float* x, float* y) {
  launch_over(s.planes * s.oh * s.ow, "adaptive average pool", adaptive_avgpool_kernel, s, x, y);
}

void clamp(const float* x, float* y, int64_t n, float lo, float hi) {
  launch_over(n, "clamp", clamp_kernel, x, y, n, lo, hi);
}

void add(const float* a, const float* b, float* y, int64_t n) {
  detail::launch_elementwise(n, detail::aligned16({a, b, y}), "add", add4_kernel, add_kernel, a, b,
                             y, n);
}

void concat_part(const float* src, int64_t mb, int64_t src_per_image, float* dst,
                 int64_t dst_per_image, int64_t offset) {
  launch_over(mb * src_per_image, "concat", concat_kernel, src, mb, src_per_image, dst,
              dst_per_image, offset);
}

}  // namespace nnperf::cuda_kernels
