// cuDNN's batch normalisation for training on the CUDA device, an alternative to the project's
// own BatchNorm kernels (kernels/cuda_kernels.h): the legacy calls PyTorch makes for a float32
// NCHW BatchNorm2d in training (at::cudnn_batch_norm: cudnnBatchNormalizationForwardTraining and
// cudnnBatchNormalizationBackward in CUDNN_BATCHNORM_SPATIAL mode, statistics over N, H and W of
// each channel), so that `train --device cuda --batchnorm cudnn` runs the same BatchNorm as the
// PyTorch peer and the two can be compared layer by layer. It lives beside the convolutions
// because it uses the same loaded libcudnn and handle (cudnn_internal.h).
//
// Numerics (cuDNN's, not ours): float statistics, the saved mean and 1/sqrt(var + eps) per channel
// as float (ours keep float64); the running variance updated with the unbiased batch variance,
// running = (1 - momentum) running + momentum batch, as torch.nn.BatchNorm2d.
//
// Implemented in cudnn_batchnorm_cuda.cc; cudnn_nocuda.cc refuses with the reason where cuDNN is
// not built in. Tests: tests/gpu/cudnn_batchnorm_test.cc (against the float64 references of
// kernels/batchnorm.h) and tests/gpu/cuda_cnn_test.cc (a training step, layer by layer against
// the CPU); `nnperf bench batchnorm --device cuda` times it beside the own kernels.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/kernels/batchnorm.h"

namespace nnperf::cudnn {

// The GPU trainer's BatchNorm algorithms, the names `--batchnorm` takes: "own" (the project's
// kernels: float64 statistics, each channel split over blocks) and "cudnn" (this header).
const std::vector<std::string>& batchnorm_algorithms();
// The entry of batchnorm_algorithms() `name` names under the project's name rule
// (core/name_registry.h: "cuDNN" is cudnn), else UsageError naming `flag` and the list.
std::string checked_batchnorm_algorithm(std::string_view flag, std::string_view name);

// "" when cuDNN's batch normalisation can run shape s, else why not: cuDNN absent or without
// its batch-normalisation entry points, or a tensor of 2^31 elements or more (cuDNN's descriptors
// take int, and PyTorch leaves such a tensor to its own kernels for the same reason).
std::string batchnorm_why_not(const BatchNormShape& s);

// Device pointers, queued on the calling thread's stream; the saved statistics in float.
using BatchNormForward = BatchNormTrainArgsOf<float>;
// Training forward: y, the running statistics and the saved ones. Throws UsageError where
// batchnorm_why_not says no, Error when cuDNN refuses the call.
void batchnorm_train_forward(const BatchNormForward& a);

struct BatchNormBackward {
  BatchNormShape shape;
  const float* x = nullptr;
  const float* dy = nullptr;
  float* dx = nullptr;  // may be null: only d_gamma and d_beta (cuDNN writes a scratch dx)
  const float* gamma = nullptr;
  const float* save_mean = nullptr;  // the forward's
  const float* save_inv = nullptr;
  double eps = 1e-5;         // the forward's
  float* d_gamma = nullptr;  // overwritten
  float* d_beta = nullptr;
};
void batchnorm_backward(const BatchNormBackward& a);

}  // namespace nnperf::cudnn
