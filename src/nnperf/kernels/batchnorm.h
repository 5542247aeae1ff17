// BatchNorm over N x C x H x W (PyTorch's BatchNorm2d semantics), the loops behind
// nn/batchnorm: channel c of image n is one contiguous plane of `plane` = H*W values.
// Training forward: per channel the batch mean and (biased) variance, accumulated in float64 in
// two passes (the mean, then centred squares), y = (x - mean) * s + beta with
// s = gamma/sqrt(var + eps), per element in float64; the running statistics move by `momentum`
// towards the batch's (the variance unbiased, N*H*W / (N*H*W - 1)). Backward: with xhat = (x -
// mean) * inv, d_gamma = sum dy*xhat, d_beta = sum dy, dx = gamma*inv*(dy - d_beta/M -
// xhat*d_gamma/M), M = N*H*W, sums in float64. Planes of more than 1024 values go channel by
// channel: each plane's sums run in 8 independent float64 accumulators (one serial chain would cost
// an add latency per element), combined in a fixed order. Smaller planes go by blocks of whole
// channels: one float64 sum per value of the block over the images, then each channel's plane in
// the same 8 accumulators. Either way the result does not depend on the thread count. With a
// ReLU fused (the args' `relu`), y = max(0, BatchNorm(x)) as the activation table's ReLU computes
// it, and the backward masks dy where the table's ReLU backward would: the same bits as the two
// layers one after the other. The forward makes one pass over the tensor fewer; the backward
// masks into dx while a channel's (or a block's) data is in cache, instead of a pass over the
// whole tensor. The *_reference functions are plain float64 loops for the tests.
#pragma once
#include <cstdint>
#include <string>

namespace nnperf {

struct BatchNormShape {
  int64_t mb = 0, channels = 0, plane = 0;
};

// The training forward's arguments; Stat is the saved statistics' type: double for nnperf's
// kernels (BatchNormTrainArgs, here and in kernels/cuda_kernels.h), float for cuDNN's
// (kernels/conv/cudnn_batchnorm.h, which ignores `threads`).
template <typename Stat>
struct BatchNormTrainArgsOf {
  BatchNormShape shape;
  const float* x = nullptr;
  float* y = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  double eps = 1e-5, momentum = 0.1;
  float* running_mean = nullptr;  // updated in place
  float* running_var = nullptr;
  Stat* save_mean = nullptr;  // out: per channel, for the backward
  Stat* save_inv = nullptr;   // out: 1/sqrt(var + eps)
  int threads = 1;
  // y = max(0, BatchNorm(x)), a ReLU fused in: the CPU loops here only (cuDNN's path refuses it,
  // kernels/cuda_kernels.h's does not read it; nn/graph fuses only where it runs the layers).
  bool relu = false;
};
using BatchNormTrainArgs = BatchNormTrainArgsOf<double>;

struct BatchNormBackwardArgs {
  BatchNormShape shape;
  const float* x = nullptr;
  const float* dy = nullptr;
  float* dx = nullptr;  // may be null: only d_gamma and d_beta
  const float* gamma = nullptr;
  const double* save_mean = nullptr;
  const double* save_inv = nullptr;
  float* d_gamma = nullptr;  // overwritten
  float* d_beta = nullptr;
  int threads = 1;
  // dy is the gradient at the output y of a fused ReLU (the forward's `relu`): it counts only
  // where y > 0. `y` is read only then.
  const float* y = nullptr;
  bool relu = false;
};

// How the training loops walk the tensor: channel by channel (one plane of each image at a time),
// or by blocks of whole channels (each image's row of the block at once: planes of at most 1024
// values). kAuto takes blocks where the plane fits one, channels above (batchnorm.cc: measured).
enum class BatchNormLayout { kAuto, kChannels, kBlocks };
// The values (channels * plane) of one image a block of channels holds, so the largest plane
// blocks take (the block loops keep float64 arrays of this many values on the stack).
inline constexpr int64_t kBatchNormBlockValues = 1024;
const char* to_string(BatchNormLayout layout);  // "auto", "channels", "blocks"
// The layout kAuto runs for s (kChannels or kBlocks).
BatchNormLayout batchnorm_auto_layout(const BatchNormShape& s);
// "" when `layout` can run s, else why not.
std::string batchnorm_layout_why_not(BatchNormLayout layout, const BatchNormShape& s);

// y = x * scale[c] + shift[c] (inference with folded running statistics).
void batchnorm_apply(const BatchNormShape& s, const float* x, const float* scale,
                     const float* shift, float* y, int threads);
// `layout` other than kAuto must serve the shape (batchnorm_layout_why_not).
void batchnorm_train_forward(const BatchNormTrainArgs& a,
                             BatchNormLayout layout = BatchNormLayout::kAuto);
void batchnorm_backward(const BatchNormBackwardArgs& a,
                        BatchNormLayout layout = BatchNormLayout::kAuto);

// Float64 references: y, the batch mean and biased variance per channel; dx, d_gamma, d_beta.
// With `relu`: y = max(0, BatchNorm(x)), and dy taken only where BatchNorm(x) > 0 (in float64).
void batchnorm_train_forward_reference(const BatchNormShape& s, const float* x, const float* gamma,
                                       const float* beta, double eps, double* y, double* mean,
                                       double* var, bool relu = false);
void batchnorm_backward_reference(const BatchNormShape& s, const float* x, const float* dy,
                                  const float* gamma, double eps, double* dx, double* d_gamma,
                                  double* d_beta, const float* beta = nullptr, bool relu = false);

}  // namespace nnperf
