// Max pooling's forward loops (pool_impl.h) compiled for AVX2 (the flags CMakeLists.txt gives
// *_avx2.cc); used only after a CPUID check (pool.cc).
#include "nnperf/kernels/pool_impl.h"
#include "nnperf/kernels/pool_internal.h"

namespace nnperf::detail {

const MaxPoolPaths kMaxPoolPathsAvx2{&maxpool_plane};

}  // namespace nnperf::detail
