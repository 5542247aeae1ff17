// Max pooling's per-instruction-set forward loops (pool_impl.h), as the dispatch in pool.cc picks
// them from active_simd().
#pragma once
#include <cstdint>

#include "nnperf/kernels/pool.h"

namespace nnperf::detail {

struct MaxPoolPaths {
  void (*plane)(const PoolShape& s, const float* xp, float* yp, int32_t* ap, float* colmax,
                int32_t* colidx);
};

extern const MaxPoolPaths kMaxPoolPathsAvx2;  // pool_avx2.cc

}  // namespace nnperf::detail
