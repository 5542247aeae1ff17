// Concat along the channel axis (dim 1) of any number of inputs that agree on every other
// dimension: GoogLeNet's inception branches, DenseNet's growing feature maps. Backward hands
// each input its slice of the output gradient.
#pragma once
#include <cstdint>
#include <vector>

#include "nnperf/nn/layer.h"

namespace nnperf {

class Concat : public Layer {
 public:
  std::string kind() const override { return "Concat"; }
  std::string describe() const override;  // "Concat(3 inputs)"
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;

 private:
  int64_t mb_ = 0, inner_ = 0, out_channels_ = 0;
  std::vector<int64_t> channels_;  // per input
};

}  // namespace nnperf
