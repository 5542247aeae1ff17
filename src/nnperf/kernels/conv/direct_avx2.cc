// The direct convolution's AVX2+FMA instantiation: tiles of up to 6 output channels x 2 ymm of
// output width (12 accumulators, 15 of 16 registers), or 1-2 output rows x 4 ymm of one channel
// for depthwise. Compiled with -mavx2 -mfma (CMake, by the file name); selected at run time by
// direct.cc.
#include "nnperf/kernels/conv/conv_simd.h"
#include "nnperf/kernels/conv/direct_impl.h"

namespace nnperf::conv_direct {

void run_avx2(const Plan& pl) { run_plan<conv_simd::Avx2>(pl); }

}  // namespace nnperf::conv_direct
