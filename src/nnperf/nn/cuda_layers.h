// How the GPU paths see a graph's layers: one classification for CNN inference
// (nn/cuda_inference.h) and CNN training (train/cuda_cnn.h), which then say which kinds they
// run. Host code only (no CUDA header).
#pragma once
#include <optional>

#include "nnperf/core/tensor.h"
#include "nnperf/kernels/pool.h"
#include "nnperf/nn/layer.h"

namespace nnperf {

enum class CudaLayerKind {
  kConv,
  kBatchNorm,
  kActivation,  // the activation table's kernels
  kRelu6,
  kMaxPool,
  kAvgPool,
  kAdaptivePool,  // AdaptiveAvgPool2d and GlobalAvgPool
  kAdd,
  kConcat,
  kLinear,
  kFlatten,
  kDropout,
};

// nullopt: a layer no GPU path knows.
std::optional<CudaLayerKind> cuda_layer_kind(const Layer& layer);

// A planned pooling layer (kMaxPool, kAvgPool, kAdaptivePool) as the GPU pool kernels take it, on
// its input `in` [mb, C, H, W]; an adaptive pool is one window per output over mb * C planes.
struct CudaPool {
  PoolShape shape{};
  bool count_include_pad = true;  // average pools: the divisor counts padding
};
CudaPool cuda_pool(const Layer& layer, const Shape& in);

}  // namespace nnperf
