// Adaptive average pooling over [mb, c, h, w] to a fixed output size, with PyTorch's window
// rule: output i covers input [floor(i * in / out), ceil((i + 1) * in / out)), so windows may
// overlap and an input smaller than the output repeats values (VGG's 7x7 pool on a 1x1 map).
// GlobalAvgPool is the 1x1 case (ResNet, GoogLeNet, DenseNet, MobileNetV2 heads).
#pragma once
#include <cstdint>

#include "nnperf/nn/layer.h"

namespace nnperf {

class AdaptiveAvgPool2d : public Layer {
 public:
  AdaptiveAvgPool2d(int64_t out_h, int64_t out_w);

  std::string kind() const override { return "AdaptiveAvgPool2d"; }
  std::string describe() const override;  // "AdaptiveAvgPool2d(7x7)"
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  double forward_flops() const override;  // one add per window element + one multiply per output

  int64_t out_h() const { return out_h_; }
  int64_t out_w() const { return out_w_; }

 private:
  int64_t out_h_, out_w_;
  int threads_ = 1;
  int64_t planes_ = 0, ih_ = 0, iw_ = 0;
};

class GlobalAvgPool : public AdaptiveAvgPool2d {
 public:
  GlobalAvgPool() : AdaptiveAvgPool2d(1, 1) {}
  std::string kind() const override { return "GlobalAvgPool"; }
  std::string describe() const override { return "GlobalAvgPool"; }
};

}  // namespace nnperf
