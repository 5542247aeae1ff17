// What the direct and implicit-GEMM convolution kernels (direct_impl.h, implicit_gemm_impl.h)
// share: SIMD traits of 8 floats (see kernels/simd_traits.h) -- Portable (GCC vector extensions,
// lowered to 2 x SSE2 on baseline x86-64) and, in files compiled with -mavx2 -mfma (*_avx2.cc),
// Avx2 -- and the launch of a run's threads. Internal linkage only and no standard-library
// inline code, so AVX2 instructions can never be picked by the linker for a caller built for
// baseline x86-64.
#pragma once
#include <omp.h>

#include <cstdint>

#include "nnperf/kernels/simd_traits.h"

namespace nnperf::conv_simd {
namespace {

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

using Portable = simd::Portable<simd::F32x8>;
#if defined(__AVX2__)
using Avx2 = simd::Avx2;
#endif

// body(tid, nt) on each of `threads` OpenMP threads; on one, called directly, without opening a
// parallel region (small problems pay no fork/join).
template <class Body>
void run_threads(int threads, const Body& body) {
  if (threads <= 1) {
    body(0, 1);
    return;
  }
#pragma omp parallel num_threads(threads)
  body(omp_get_thread_num(), omp_get_num_threads());
}

}  // namespace
}  // namespace nnperf::conv_simd
