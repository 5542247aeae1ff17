// AVX-512 FMA loop: 16 independent zmm accumulators (two 512-bit FMA pipes on server Intel
// cores; one or two on others, which is exactly what this loop is here to find out).
#include <cstdint>

#include "nnperf/kernels/peak/peak_impl.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf {

double fma_peak_loop_avx512(int64_t iters, float* sink) {
  return peak::fma_chains<simd::Avx512, 16>(iters, sink);
}

}  // namespace nnperf
