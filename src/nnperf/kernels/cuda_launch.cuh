// Launch helpers shared by the .cu files of kernels/ (CUDA translation units only): one thread
// per element (or per group of four, through float4) over grid-stride loops of kBlock-thread
// blocks, and the check after each launch. The index arithmetic they share with the host tests
// is in cuda_index.h.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "nnperf/gpu/cuda_check.h"
#include "nnperf/kernels/batchnorm.h"
#include "nnperf/kernels/cuda_index.h"
#include "nnperf/kernels/pool.h"

namespace nnperf::cuda_kernels::detail {

inline void launched(const char* what) { cuda::check(cudaGetLastError(), what); }

__device__ inline int64_t first_index() { return int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return int64_t{gridDim.x} * blockDim.x; }

// Whether every pointer is 16-byte aligned, so that its floats can be moved four at a time as
// float4 (one 128-bit access instead of four: a memory-bound kernel gets closer to the device's
// bandwidth). cudaMalloc's buffers are; a view into one at an odd offset may not be.
inline bool aligned16(std::initializer_list<const void*> pointers) {
  return std::all_of(pointers.begin(), pointers.end(),
                     [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; });
}

// Element-wise over n floats of 16-byte-aligned arrays, vectorised: `group(g)` handles elements
// 4g .. 4g+3 for every g < n / 4 (grid-stride), then `one(k)` each of the last n % 4 elements (at
// most three, by the grid's first threads), all in one launch (cuda_index.h's walk, launched
// with blocks_for_groups(n) blocks).
template <typename Group, typename One>
__device__ void by_groups_of_four(int64_t n, Group group, One one) {
  walk_groups_of_four(n, first_index(), grid_stride(), group, one);
}

// Checks the device, then launches `kernel` over n elements (nothing when n <= 0) and checks the
// launch; `what` names it in the error.
template <typename Kernel, typename... Args>
void launch_over(int64_t n, const char* what, Kernel kernel, Args... args) {
  cuda::ensure_device();
  if (n <= 0) return;
  kernel<<<blocks_for(n), kBlock>>>(args...);
  launched(what);
}

// The same for an element-wise kernel with a float4 twin: `by_fours` (written with
// by_groups_of_four, blocks_for_groups(n) blocks) when `aligned` (every array 16-byte aligned,
// aligned16), else `by_ones`; both take args...
template <typename K4, typename K1, typename... Args>
void launch_elementwise(int64_t n, bool aligned, const char* what, K4 by_fours, K1 by_ones,
                        Args... args) {
  cuda::ensure_device();
  if (n <= 0) return;
  if (aligned) {
    by_fours<<<blocks_for_groups(n), kBlock>>>(args...);
  } else {
    by_ones<<<blocks_for(n), kBlock>>>(args...);
  }
  launched(what);
}

// An element-wise kernel over the mb * channels * plane elements of s that finds each element's
// channel by division: k32 (its uint32_t instance) where every index fits in 31 bits, a 32-bit
// division per element, else k64 (int64_t). Both take (n, plane, channels, args...).
template <typename K32, typename K64, typename... Args>
void launch_per_element(const BatchNormShape& s, const char* what, K32 k32, K64 k64, Args... args) {
  const int64_t n = s.mb * s.channels * s.plane;
  if (n < (int64_t{1} << 31)) {
    launch_over(n, what, k32, static_cast<uint32_t>(n), static_cast<uint32_t>(s.plane),
                static_cast<uint32_t>(s.channels), args...);
  } else {
    launch_over(n, what, k64, n, s.plane, s.channels, args...);
  }
}

// The same over groups of four elements where s.plane is a multiple of four (no group straddles
// two channels): k32 or k64 take (n / 4, plane / 4, channels, args...).
template <typename K32, typename K64, typename... Args>
void launch_per_group_of_four(const BatchNormShape& s, const char* what, K32 k32, K64 k64,
                              Args... args) {
  const int64_t groups = s.mb * s.channels * s.plane / 4;
  if (groups < (int64_t{1} << 31)) {
    launch_over(groups, what, k32, static_cast<uint32_t>(groups),
                static_cast<uint32_t>(s.plane / 4), static_cast<uint32_t>(s.channels), args...);
  } else {
    launch_over(groups, what, k64, groups, s.plane / 4, s.channels, args...);
  }
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
