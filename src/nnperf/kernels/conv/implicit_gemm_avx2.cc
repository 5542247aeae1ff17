// The implicit-GEMM convolutions' AVX2+FMA instantiation: 6 x 16 micro-kernel (12 ymm
// accumulators), vector copies of contiguous patch rows; implicit_precomp_gemm's panels are one
// or two runs of its phase-split copy (vector loads, a blend at a row end), vgatherdps where a
// panel spans more rows.
// Compiled with -mavx2 -mfma (CMake, by the file name); selected at run time.
#include "nnperf/kernels/conv/conv_simd.h"
#include "nnperf/kernels/conv/implicit_gemm_impl.h"

namespace nnperf::conv_igemm {

void run_avx2(const Plan& pl) { run_plan<conv_simd::Avx2>(pl); }

}  // namespace nnperf::conv_igemm
