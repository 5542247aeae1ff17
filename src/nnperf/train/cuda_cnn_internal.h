// The device state of CudaCnnTrainer (train/cuda_cnn.h), shared by its translation units:
// cuda_cnn.cc (planning, optimizer state, accessors) and cuda_cnn_step.cc (the passes, the step,
// evaluation, the captured graphs).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nnperf/core/tensor.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/pool.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/cuda_layers.h"
#include "nnperf/train/cuda_cnn.h"

namespace nnperf {

struct CudaCnnTrainer::Param {
  Tensor* host = nullptr;
  cuda::Buffer value, grad, s1, s2;  // s1: momentum buffer or Adam's m; s2: Adam's v
};

// A conv node's cuDNN plans for one batch size.
struct CudaCnnTrainer::ConvPlans {
  std::unique_ptr<cudnn::ConvForward> fwd;
  std::unique_ptr<cudnn::ConvBackward> bwd_data, bwd_weights;
  std::string alg_fwd, alg_data, alg_weights;
};

struct CudaCnnTrainer::Node {
  CudaLayerKind kind = CudaLayerKind::kFlatten;
  cuda::Buffer out, grad;
  // Where the node's gradient is: grad's storage, or (GradientRouting::kShared) that of node
  // grad_node, the pass-through node it shares with, grad then released.
  float* grad_at = nullptr;
  std::size_t grad_node = 0;
  std::vector<int> inputs;
  std::vector<float*> d_src;  // where backward writes each input's gradient (null: none needed)
  struct Sum {
    float* dst;        // the producer's gradient
    const float* src;  // the edge's scratch buffer
    int64_t n, planned_n;
  };
  std::vector<Sum> accumulate;
  // The sizes the kernels are given, for the batch set_batch set (numel, mb, and shape, pool and
  // gemm where the kind uses them), and their values at the planned batch.
  int64_t numel = 0, mb = 0;
  BatchNormShape shape{};
  PoolShape pool{};
  GemmShape gemm{};
  struct Sizes {
    int64_t numel = 0, mb = 0;
    BatchNormShape shape{};
    PoolShape pool{};
    GemmShape gemm{};
  } planned;
  std::unique_ptr<ConvPlans> conv, short_conv;  // the planned batch's, the short batch's
  ConvPlans* plans = nullptr;                   // the one for the current batch
  Param* w = nullptr;                           // conv/linear weight; BatchNorm gamma
  Param* b = nullptr;                           // bias; BatchNorm beta
  BatchNorm2d* bn = nullptr;
  // save_*: per channel, two floats each: a double for the own kernels, a float for cuDNN's
  cuda::Buffer running_mean, running_var, save_mean, save_inv;
  cuda::Buffer eval_scale, eval_shift;  // BatchNorm on running statistics, as one affine map
  bool count_include_pad = true;
  cuda::Buffer argmax;  // int32 bit patterns, one per output
  const ActivationKernel* act = nullptr;
  float keep = 1.0f;  // Dropout: 1 - p
  cuda::Buffer mask;  // Dropout: the last training forward's mask, 0 or 1 / keep
};

}  // namespace nnperf
