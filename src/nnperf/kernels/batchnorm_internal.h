// BatchNorm's per-instruction-set loops (batchnorm_impl.h), as the dispatch in batchnorm.cc
// picks them from active_simd().
#pragma once
#include <cstdint>

#include "nnperf/kernels/batchnorm.h"

namespace nnperf::detail {

struct BatchNormPaths {
  void (*train_forward_channel)(const BatchNormTrainArgs& a, int64_t c);
  void (*backward_channel)(const BatchNormBackwardArgs& a, int64_t c);
  void (*apply_rows)(const BatchNormShape& s, const float* x, const float* scale,
                     const float* shift, float* y, int64_t r0, int64_t r1);
  // Small planes: blocks of whole channels, each image's row of the block at once.
  void (*train_forward_block)(const BatchNormTrainArgs& a, int64_t c0, int64_t c1);
  void (*backward_block)(const BatchNormBackwardArgs& a, int64_t c0, int64_t c1);
  void (*apply_images)(const BatchNormShape& s, const float* x, const float* scale_values,
                       const float* shift_values, float* y, int64_t n0, int64_t n1);
};

extern const BatchNormPaths kBatchNormPathsAvx2;    // batchnorm_avx2.cc
extern const BatchNormPaths kBatchNormPathsAvx512;  // batchnorm_avx512.cc

}  // namespace nnperf::detail
