#include "nnperf/nn/cuda_layers.h"

#include "nnperf/core/error.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/add.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/concat.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/dropout.h"
#include "nnperf/nn/flatten.h"
#include "nnperf/nn/global_pool.h"
#include "nnperf/nn/linear.h"
#include "nnperf/nn/pool.h"
#include "nnperf/nn/relu6.h"

namespace nnperf {

std::optional<CudaLayerKind> cuda_layer_kind(const Layer& l) {
  if (dynamic_cast<const Conv2d*>(&l) != nullptr) return CudaLayerKind::kConv;
  if (dynamic_cast<const BatchNorm2d*>(&l) != nullptr) return CudaLayerKind::kBatchNorm;
  if (dynamic_cast<const Activation*>(&l) != nullptr) return CudaLayerKind::kActivation;
  if (dynamic_cast<const ReLU6*>(&l) != nullptr) return CudaLayerKind::kRelu6;
  if (dynamic_cast<const MaxPool2d*>(&l) != nullptr) return CudaLayerKind::kMaxPool;
  if (dynamic_cast<const AvgPool2d*>(&l) != nullptr) return CudaLayerKind::kAvgPool;
  if (dynamic_cast<const AdaptiveAvgPool2d*>(&l) != nullptr) return CudaLayerKind::kAdaptivePool;
  if (dynamic_cast<const Add*>(&l) != nullptr) return CudaLayerKind::kAdd;
  if (dynamic_cast<const Concat*>(&l) != nullptr) return CudaLayerKind::kConcat;
  if (dynamic_cast<const Linear*>(&l) != nullptr) return CudaLayerKind::kLinear;
  if (dynamic_cast<const Flatten*>(&l) != nullptr) return CudaLayerKind::kFlatten;
  if (dynamic_cast<const Dropout*>(&l) != nullptr) return CudaLayerKind::kDropout;
  return std::nullopt;
}

CudaPool cuda_pool(const Layer& l, const Shape& in) {
  CudaPool c;
  if (const auto* m = dynamic_cast<const MaxPool2d*>(&l)) {
    c.shape = m->shape();
  } else if (const auto* a = dynamic_cast<const AvgPool2d*>(&l)) {
    c.shape = a->shape();
    c.count_include_pad = a->count_include_pad();
  } else if (const auto* g = dynamic_cast<const AdaptiveAvgPool2d*>(&l)) {
    c.shape = {in[0] * in[1], in[2], in[3], g->out_h(), g->out_w(), 1, 1, 0};
  } else {
    fail("cuda_pool: {} is not a pooling layer", l.kind());
  }
  return c;
}

}  // namespace nnperf
