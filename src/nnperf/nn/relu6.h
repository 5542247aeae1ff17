// ReLU6 (MobileNetV2's activation; a layer of its own, not in the activation table, which drives
// the activation-timing study).
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "nnperf/nn/layer.h"

namespace nnperf {

// ReLU6: min(max(x, 0), 6); the gradient passes where 0 < x < 6 (PyTorch's hardtanh rule).
class ReLU6 : public Layer {
 public:
  std::string kind() const override { return "Activation"; }
  std::string describe() const override { return "ReLU6"; }
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  double forward_flops() const override { return 2.0 * static_cast<double>(n_); }
  bool is_activation() const override { return true; }

 private:
  int64_t n_ = 0;
};

}  // namespace nnperf
