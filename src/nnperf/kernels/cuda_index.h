// The index arithmetic of the CUDA kernels (kernels/*.cu) that is easy to get wrong: the grid of
// a grid-stride launch, the float4 walk and its tail, which elements each thread of a per-channel
// split reduction visits and how many splits a channel gets, an element's channel. Plain C++ that
// nvcc also compiles for the device (NNPERF_HOST_DEVICE), so the host tests
// (tests/kernels/cuda_index_test.cc) run these same walks for every thread and block of a launch
// and check that each element is visited exactly once.
#pragma once
#include <algorithm>
#include <cstdint>

#include "nnperf/kernels/batchnorm.h"
#include "nnperf/kernels/host_device.h"

namespace nnperf::cuda_kernels::detail {

// Threads per block of every kernel launched through cuda_launch.cuh.
inline constexpr int kBlock = 256;
// At most this many blocks per launch (grid-stride loops cover the rest).
inline constexpr int64_t kMaxBlocks = 65536;

// Blocks for one thread per element over n elements (at least one).
inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, kMaxBlocks));
}

// The grid for walk_groups_of_four over n elements.
inline unsigned blocks_for_groups(int64_t n) { return blocks_for(std::max<int64_t>(n / 4, 1)); }

// Element-wise over n floats moved four at a time: the thread whose global index is `first`, in a
// grid of `stride` threads, calls group(g) for its groups g < n / 4 (elements 4g .. 4g+3), then
// one(k) for the tail element k = 4 (n / 4) + first if k < n (the n % 4 <= 3 tail by the grid's
// first threads).
template <typename Group, typename One>
NNPERF_HOST_DEVICE void walk_groups_of_four(int64_t n, int64_t first, int64_t stride, Group group,
                                            One one) {
  const int64_t groups = n / 4;
  for (int64_t g = first; g < groups; g += stride) group(g);
  const int64_t k = groups * 4 + first;
  if (k < n) one(k);
}

// The channel of flat index i of an NCHW tensor with `plane` values per channel: I is uint32_t
// where every index fits in 31 bits (a 32-bit division), else int64_t. With plane a multiple of
// four, group g's channel is channel_of(g, plane / 4, channels).
template <typename I>
NNPERF_HOST_DEVICE I channel_of(I i, I plane, I channels) {
  return (i / plane) % channels;
}

// Blocks per channel for the per-channel sums (BatchNorm training, channel_sum): about
// kReductionBlocks blocks in all, none given fewer than four elements per thread on average, at
// most kMaxSplits, at least one.
inline constexpr int64_t kReductionBlocks = 1024, kMaxSplits = 64;

inline int bn_splits(const BatchNormShape& s) {
  const int64_t want = (kReductionBlocks + s.channels - 1) / std::max<int64_t>(s.channels, 1);
  const int64_t most = (s.mb * s.plane) / (4 * kBlock);
  return static_cast<int>(std::clamp<int64_t>(std::min(want, most), 1, kMaxSplits));
}

// The elements of channel c whose flat index (image-major over its mb * plane) lies in split
// `split` of `splits`, walked by the split's kBlock threads kBlock apart: thread `thread` calls
// f(offset in the NCHW tensor) for each of its elements. One division per thread, none per
// element.
template <typename F>
NNPERF_HOST_DEVICE void walk_split(const BatchNormShape& s, int64_t c, int splits, int64_t split,
                                   int64_t thread, F f) {
  const int64_t count = s.mb * s.plane, size = (count + splits - 1) / splits;
  const int64_t start = split * size;
  const int64_t lo = start < count ? start : count, hi = lo + size < count ? lo + size : count;
  int64_t i = lo + thread;
  if (i >= hi) return;
  int64_t n = i / s.plane, j = i % s.plane;
  const int64_t dn = kBlock / s.plane, dj = kBlock % s.plane;
#ifdef __CUDA_ARCH__
#pragma unroll 4  // loads of four iterations in flight at once: the sums are bandwidth-bound
#endif
  for (; i < hi; i += kBlock) {
    f((n * s.channels + c) * s.plane + j);
    n += dn;
    j += dj;
    if (j >= s.plane) {
      j -= s.plane;
      ++n;
    }
  }
}

}  // namespace nnperf::cuda_kernels::detail
