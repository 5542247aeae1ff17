// Micro-kernels that measure the machine rather than compute anything useful: an FMA loop with
// enough independent accumulators to fill every FMA pipe, and a STREAM-style triad. The timing
// and the arithmetic around them live in analysis/peaks.
#pragma once
#include <cstdint>

#include "nnperf/core/cpu.h"

namespace nnperf {

// Runs `iters` rounds of independent fused multiply-adds on registers; returns the FLOPs done
// (2 per lane per FMA). `sink` receives a value that depends on every accumulator, so the
// compiler cannot drop the loop.
double fma_peak_loop(SimdLevel level, int64_t iters, float* sink);

// a[i] = b[i] + s * c[i] (STREAM triad): 12 bytes moved per element (two loads, one store;
// write-allocate traffic not counted, as STREAM does).
void stream_triad(float* a, const float* b, const float* c, float s, int64_t n);

}  // namespace nnperf
