// BatchNorm2d over [mb, c, h, w], PyTorch semantics: planned for inference it normalises with the
// running statistics (y = (x - mean) / sqrt(var + eps) * gamma + beta); planned for training it
// uses the batch statistics (biased variance), updates the running ones with momentum
// (running = (1 - m) * running + m * batch, the variance unbiased) and has a backward.
// Running statistics are buffers, not parameters (torchvision's parameter counts exclude them).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "nnperf/nn/layer.h"

namespace nnperf {

class BatchNorm2d : public Layer {
 public:
  explicit BatchNorm2d(int64_t channels, double eps = 1e-5, double momentum = 0.1);

  std::string kind() const override { return "BatchNorm2d"; }
  std::string describe() const override;  // "BatchNorm2d(64)", "BatchNorm2d(64, eps 0.001)"
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  // Training plans only: the loops of kernels/batchnorm.h take the ReLU in (inference keeps the
  // layers apart, as their per-layer times are reported).
  bool fuse_relu(bool fuse, const PlanContext& ctx) override {
    relu_ = fuse && ctx.training;
    return relu_;
  }
  bool fused_relu() const { return relu_; }
  std::vector<Param> params() override;  // weight (gamma), bias (beta)
  int64_t num_params() const override { return weight_.numel() + bias_.numel(); }
  // gamma = 1, beta = 0, running mean 0, running var 1 (PyTorch's reset_parameters).
  void init(Rng& rng) override;
  // 2 per element (scale and shift) for inference; 5 when training (+ sum, sum of squares and
  // the centring for the batch statistics).
  double forward_flops() const override;
  // Training: the layout the loops run (kernels/batchnorm.h) and why, e.g. "layout=blocks (a
  // plane of 49 values; blocks of channels take planes up to 1024)", then " + ReLU fused" where
  // it is; inference: empty.
  std::string dispatch() const override;

  int64_t channels() const { return c_; }
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }
  Tensor& weight() { return weight_; }
  Tensor& bias() { return bias_; }
  Tensor& running_mean() { return running_mean_; }
  Tensor& running_var() { return running_var_; }
  const Tensor& weight_grad() const { return d_weight_; }
  const Tensor& bias_grad() const { return d_bias_; }
  // Inference-mode affine map per channel in double: y = x * scale[c] + shift[c], with
  // scale = gamma / sqrt(running_var + eps), shift = beta - running_mean * scale (for folding).
  void inference_scale_shift(double* scale, double* shift) const;

 private:
  std::pair<double, double> channel_scale_shift(int64_t c) const;  // inference_scale_shift's

  int64_t c_;
  double eps_, momentum_;
  Tensor weight_, bias_, d_weight_, d_bias_, running_mean_, running_var_;
  bool training_ = false;
  bool relu_ = false;  // fuse_relu's answer
  int threads_ = 1;
  int64_t mb_ = 0, plane_ = 0;
  std::vector<float> scale_, shift_;          // inference: per-channel affine map
  std::vector<double> save_mean_, save_inv_;  // training: batch mean and 1/sqrt(var + eps)
};

}  // namespace nnperf
