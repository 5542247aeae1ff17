// Activation layer: one row of the activation table (kernels/activations.h) applied element-wise
// to a tensor of any shape. The profiler finds these nodes through is_activation().
#pragma once
#include <string>
#include <utility>

#include "nnperf/kernels/activations.h"
#include "nnperf/nn/layer.h"

namespace nnperf {

class Activation : public Layer {
 public:
  explicit Activation(const ActivationKernel& kernel) : kernel_(&kernel) {}

  std::string kind() const override { return "Activation"; }
  std::string describe() const override { return kernel_->name; }
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  double forward_flops() const override {
    return static_cast<double>(n_) * kernel_->flops_per_element;
  }
  bool is_activation() const override { return true; }
  const ActivationKernel& kernel() const { return *kernel_; }
  // Set by Graph::plan: the node whose layer applies this ReLU (Layer::fuse_relu), so this one
  // runs nothing; empty when it runs itself.
  void set_fused_into(std::string node) { fused_into_ = std::move(node); }
  const std::string& fused_into() const { return fused_into_; }
  // "fused into NODE" while fused; else empty.
  std::string dispatch() const override;

 private:
  const ActivationKernel* kernel_;
  int64_t n_ = 0;
  int threads_ = 1;
  std::string fused_into_;
};

}  // namespace nnperf
