// The kernels of gpu_peak.h. Bandwidth kernels use float4 loads and stores where n allows (device
// allocations are 256-byte aligned) with a scalar tail, grid-stride, so any n works.
#include <cuda_runtime.h>

#include <cstdint>

#include "nnperf/gpu/cuda_check.h"
#include "nnperf/kernels/peak/gpu_peak.h"

namespace nnperf::cuda_kernels {

namespace {

constexpr int kThreads = kGpuStreamThreads;

__global__ void fma_kernel(float* out, int64_t iters, float a, float b) {
  const int64_t t = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  float x[kGpuFmaChains];
#pragma unroll
  for (int c = 0; c < kGpuFmaChains; ++c) x[c] = static_cast<float>(c) + static_cast<float>(t) * 1e-6f;
#pragma unroll 4
  for (int64_t i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < kGpuFmaChains; ++c) x[c] = fmaf(x[c], a, b);
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kGpuFmaChains; ++c) s += x[c];
  out[t] = s;
}

__device__ int64_t grid_threads() { return int64_t{gridDim.x} * blockDim.x; }
__device__ int64_t thread_index() { return int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }

// Passes are not merged by the compiler: copy's and triad's stores may alias their loads (no
// __restrict__), and read's sum depends on every load of every pass.
__global__ void read_kernel(const float* a, float* partial, int64_t n, int passes) {
  const int64_t n4 = n / 4, stride = grid_threads(), t = thread_index();
  const float4* a4 = reinterpret_cast<const float4*>(a);
  float s = 0.0f;
  for (int p = 0; p < passes; ++p) {
    for (int64_t i = t; i < n4; i += stride) {
      const float4 v = a4[i];
      s += (v.x + v.y) + (v.z + v.w);
    }
    for (int64_t i = 4 * n4 + t; i < n; i += stride) s += a[i];
  }
  partial[t] = s;
}

__global__ void copy_kernel(const float* a, float* b, int64_t n, int passes) {
  const int64_t n4 = n / 4, stride = grid_threads(), t = thread_index();
  const float4* a4 = reinterpret_cast<const float4*>(a);
  float4* b4 = reinterpret_cast<float4*>(b);
  for (int p = 0; p < passes; ++p) {
    for (int64_t i = t; i < n4; i += stride) b4[i] = a4[i];
    for (int64_t i = 4 * n4 + t; i < n; i += stride) b[i] = a[i];
  }
}

__global__ void triad_kernel(float* a, const float* b, const float* c, float s, int64_t n,
                             int passes) {
  const int64_t n4 = n / 4, stride = grid_threads(), t = thread_index();
  float4* a4 = reinterpret_cast<float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  const float4* c4 = reinterpret_cast<const float4*>(c);
  for (int p = 0; p < passes; ++p) {
    for (int64_t i = t; i < n4; i += stride) {
      const float4 x = b4[i], y = c4[i];
      a4[i] = make_float4(fmaf(s, y.x, x.x), fmaf(s, y.y, x.y), fmaf(s, y.z, x.z),
                          fmaf(s, y.w, x.w));
    }
    for (int64_t i = 4 * n4 + t; i < n; i += stride) a[i] = fmaf(s, c[i], b[i]);
  }
}

__global__ void fill_kernel(float* a, float value, int64_t n) {
  for (int64_t i = thread_index(); i < n; i += grid_threads()) a[i] = value;
}

void launched(const char* what) { cuda::check(cudaGetLastError(), what); }

}  // namespace

void fma_chains(float* out, int blocks, int threads_per_block, int64_t iters, float a, float b) {
  cuda::ensure_device();
  fma_kernel<<<blocks, threads_per_block>>>(out, iters, a, b);
  launched("fma_chains launch");
}

void stream_read(const float* a, float* partial, int64_t n, int passes, int blocks) {
  cuda::ensure_device();
  read_kernel<<<blocks, kThreads>>>(a, partial, n, passes);
  launched("stream_read launch");
}

void stream_copy(const float* a, float* b, int64_t n, int passes, int blocks) {
  cuda::ensure_device();
  copy_kernel<<<blocks, kThreads>>>(a, b, n, passes);
  launched("stream_copy launch");
}

void stream_triad(float* a, const float* b, const float* c, float scalar, int64_t n, int passes,
                  int blocks) {
  cuda::ensure_device();
  triad_kernel<<<blocks, kThreads>>>(a, b, c, scalar, n, passes);
  launched("stream_triad launch");
}

void fill(float* a, float value, int64_t n, int blocks) {
  cuda::ensure_device();
  fill_kernel<<<blocks, kThreads>>>(a, value, n);
  launched("fill launch");
}

}  // namespace nnperf::cuda_kernels
