// Launch helpers shared by the .cu files of kernels/ (CUDA translation units only): one thread
// per element over grid-stride loops of kBlock-thread blocks, and the check after each launch.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "nnperf/gpu/cuda_check.h"
#include "nnperf/kernels/pool.h"

namespace nnperf::cuda_kernels::detail {

inline constexpr int kBlock = 256;

inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, 65536));
}

inline void launched(const char* what) { cuda::check(cudaGetLastError(), what); }

__device__ inline int64_t first_index() { return int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return int64_t{gridDim.x} * blockDim.x; }

// Checks the device, then launches `kernel` over n elements (nothing when n <= 0) and checks the
// launch; `what` names it in the error.
template <typename Kernel, typename... Args>
void launch_over(int64_t n, const char* what, Kernel kernel, Args... args) {
  cuda::ensure_device();
  if (n <= 0) return;
  kernel<<<blocks_for(n), kBlock>>>(args...);
  launched(what);
}

// The same with one kBlock-thread block per item (a channel): `blocks` blocks, none when <= 0.
template <typename Kernel, typename... Args>
void launch_blocks(int64_t blocks, const char* what, Kernel kernel, Args... args) {
  cuda::ensure_device();
  if (blocks <= 0) return;
  kernel<<<static_cast<unsigned>(blocks), kBlock>>>(args...);
  launched(what);
}

// pool.h's avgpool_divisor on the device: output (oy, ox)'s window clipped to the padded input
// (count_include_pad) or to the input.
__device__ inline int64_t avg_divisor(const PoolShape& s, bool count_include_pad, int64_t oy,
                                      int64_t ox) {
  const int64_t h0 = oy * s.s - s.p, w0 = ox * s.s - s.p;
  if (count_include_pad) {
    return (min(h0 + s.k, s.ih + s.p) - h0) * (min(w0 + s.k, s.iw + s.p) - w0);
  }
  return (min(h0 + s.k, s.ih) - max(h0, int64_t{0})) * (min(w0 + s.k, s.iw) - max(w0, int64_t{0}));
}

}  // namespace nnperf::cuda_kernels::detail
