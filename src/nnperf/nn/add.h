// Add: element-wise sum of two or more inputs of the same shape (residual connections). The
// gradient of each input is the output gradient itself: a copy per input slot that needs one;
// Graph gives an input that feeds nothing else this node's gradient instead (no slot).
#pragma once
#include "nnperf/nn/layer.h"

namespace nnperf {

class Add : public Layer {
 public:
  std::string kind() const override { return "Add"; }
  std::string describe() const override { return "Add"; }
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  double forward_flops() const override;
  bool passes_gradient_through() const override { return true; }

 private:
  int64_t n_ = 0;
  int threads_ = 1;
  int64_t inputs_ = 0;
};

}  // namespace nnperf
