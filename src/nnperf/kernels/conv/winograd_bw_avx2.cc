// Backward-weights winograd_nonfused's transforms (winograd_bw_impl.h) compiled for AVX2, 8 tiles
// (or input channels) per vector (the flags CMakeLists.txt gives *_avx2.cc); used only after a
// CPUID check (winograd_bw::transforms_for).
#include "nnperf/kernels/conv/winograd_bw_impl.h"

namespace nnperf::winograd_bw {

const Transforms kTransformsAvx2{&input_transform<simd::Avx2>, &grad_transform<simd::Avx2>,
                                 &inverse_transform<simd::Avx2>};

}  // namespace nnperf::winograd_bw
