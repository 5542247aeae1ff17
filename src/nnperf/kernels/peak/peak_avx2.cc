// AVX2 FMA loop: 12 independent ymm accumulators. Zen 3 and recent Intel cores have two FMA
// pipes with 4-5 cycles latency, so at least 8-10 chains are needed to keep both busy.
#include <cstdint>

#include "nnperf/kernels/peak/peak_impl.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf {

double fma_peak_loop_avx2(int64_t iters, float* sink) {
  return peak::fma_chains<simd::Avx2, 12>(iters, sink);
}

}  // namespace nnperf
