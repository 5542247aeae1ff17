// The GPU ceiling kernels of `peaks --device cuda` (analysis/gpu_peaks.h), on device pointers and
// the default stream, as the CPU loops of peak.h: an FMA loop whose chains are independent so the
// pipelines stay full, and STREAM's read, copy and triad over device memory. Built in
// gpu_peak_cuda.cu; without the CUDA backend every entry throws the reason (gpu_peak_nocuda.cc).
// Tests: tests/gpu/gpu_peaks_test.cc (the values each kernel leaves against a host loop).
#pragma once
#include <cstdint>

namespace nnperf::cuda_kernels {

// Independent FMA chains per thread: enough that a scheduler issuing one FMA per cycle per lane
// never waits on the 4-cycle latency of the previous one in the same chain.
inline constexpr int kGpuFmaChains = 8;

// blocks x threads_per_block threads; thread t runs `iters` rounds of kGpuFmaChains chains
// x = fmaf(x, a, b) from x_c = c + t * 1e-6 and writes the sum of its chains to out[t] (so the
// work cannot be dropped). FLOPs = 2 * kGpuFmaChains * iters * blocks * threads_per_block.
void fma_chains(float* out, int blocks, int threads_per_block, int64_t iters, float a, float b);

// STREAM's kernels, each sweeping its arrays `passes` times in one launch (so a working set that
// fits in L2 is timed by its traffic, not by launch overhead), grid-stride over blocks x
// kGpuStreamThreads threads:
// read:  partial[i] = sum of the a[j] grid-thread i reads, over all passes (n floats read per
//        pass; partial holds blocks * kGpuStreamThreads floats);
// copy:  b[i] = a[i] (2n floats moved per pass);
// triad: a[i] = b[i] + scalar * c[i] (3n floats moved per pass).
inline constexpr int kGpuStreamThreads = 256;
void stream_read(const float* a, float* partial, int64_t n, int passes, int blocks);
void stream_copy(const float* a, float* b, int64_t n, int passes, int blocks);
void stream_triad(float* a, const float* b, const float* c, float scalar, int64_t n, int passes,
                  int blocks);
// a[i] = value (to initialise device arrays without a host copy).
void fill(float* a, float value, int64_t n, int blocks);

}  // namespace nnperf::cuda_kernels
