// BatchNorm's loops (batchnorm_impl.h) compiled for AVX512 (the flags CMakeLists.txt gives
// *_avx512.cc, floating-point contraction off); used only after a CPUID check (batchnorm.cc).
#include "nnperf/kernels/batchnorm_impl.h"
#include "nnperf/kernels/batchnorm_internal.h"

namespace nnperf::detail {

const BatchNormPaths kBatchNormPathsAvx512{
    &train_forward_channel, &backward_channel, &apply_rows,
    &train_forward_block,   &backward_block,   &apply_images};

}  // namespace nnperf::detail
