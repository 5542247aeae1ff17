// How the GPU paths see a graph's layers: one classification for CNN inference
// (nn/cuda_inference.h) and CNN training (train/cuda_cnn.h), which then say which kinds they
// run. Host code only (no CUDA header).
#pragma once
#include <optional>

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

}  // namespace nnperf
