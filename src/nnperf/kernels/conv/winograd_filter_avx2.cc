// Winograd's weight transform for AVX2 + FMA machines (winograd_filter_impl.h; contraction off
// in CMakeLists.txt, so the portable bits); reached through kKernelsAvx2 after a CPUID check.
#include "nnperf/kernels/conv/winograd_filter_impl.h"

namespace nnperf::winograd {

void transform_filters_avx2(const double (*g)[kFilterLanes], float (*u)[kFilterLanes]) {
  filter_transform(g, u);
}

}  // namespace nnperf::winograd
