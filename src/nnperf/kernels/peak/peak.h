// Micro-kernels that measure the machine rather than compute anything useful: FMA loops with a
// chosen number of independent accumulators at every SIMD width, and the bandwidth kernels of the
// working-set sweep (read, copy, triad) plus a plain STREAM-triad loop to check them against.
// The timing, the threads and the arithmetic around them live in analysis/peaks.
#pragma once
#include <cstdint>
#include <span>

#include "nnperf/core/cpu.h"

namespace nnperf {

// One FMA loop: `chains` independent accumulators of `lanes` floats, each updated once per
// iteration (x = x * a + b). run() does `iters` iterations, returns the FLOPs done (2 per lane
// per update) and stores in *sink a value that depends on every accumulator, so the compiler
// cannot drop the loop. The update is one FMA instruction where the row's `needs` level has FMA
// (the scalar and 128-bit rows of the AVX2 file), else a multiply and an add (the baseline rows).
struct FmaKernel {
  const char* name;  // "avx2 fma", "sse mul+add": what the instructions are
  const char* simd;  // "scalar", "sse" (128-bit), "avx2" (256-bit), "avx512" (512-bit)
  SimdLevel needs;   // the file's compile level: the row runs only where active_simd() >= needs
  int lanes;
  int chains;
  double (*run)(int64_t iters, float* sink);
};

// Every FMA loop, by width then chain count. For one simd width only the rows of the highest
// `needs` the CPU allows are measured (FMA where there is FMA); the best chain count is kept.
std::span<const FmaKernel> fma_kernels();

// The bandwidth kernels of one SIMD level. Each runs `reps` passes over its arrays of n floats;
// n must be a multiple of `block` (floats). Bytes counted the STREAM way (no write-allocate):
// read 4 per element, copy 8, triad 12.
struct BandwidthKernels {
  const char* simd;
  int64_t block;
  // sum of a[0..n): 8 independent vector accumulators (a single sum would be add-latency bound).
  float (*read)(const float* a, int64_t n, int64_t reps);
  // dst[i] = src[i]
  void (*copy)(float* dst, const float* src, int64_t n, int64_t reps);
  // a[i] = b[i] + s * c[i]
  void (*triad)(float* a, const float* b, const float* c, float s, int64_t n, int64_t reps);
};
const BandwidthKernels& bandwidth_kernels(SimdLevel level);

// The classic STREAM triad shape over doubles (24 bytes per element), written as a plain loop
// for the compiler to vectorize: `reps` passes of `#pragma omp for nowait` inside one parallel
// region of `threads` threads, so every thread walks the same static slice each pass and no
// barrier is timed between passes. The check that the sweep's own kernels count bytes right.
void stream_triad_f64(double* a, const double* b, const double* c, double s, int64_t n,
                      int64_t reps, int threads, SimdLevel level);

}  // namespace nnperf
