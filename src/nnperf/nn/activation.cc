// Activation layer: the table row's forward/backward over the whole tensor.
#include "nnperf/nn/activation.h"

#include <fmt/format.h>

#include "nnperf/core/error.h"

namespace nnperf {

Shape Activation::plan(std::span<const Shape> src, const PlanContext& /*ctx*/) {
  if (src.size() != 1) {
    throw Error(fmt::format("{}: expected 1 input, got {}", describe(), src.size()));
  }
  if (src[0].rank() < 1)
    throw Error(fmt::format("{}: expected a tensor, got a scalar", describe()));
  n_ = src[0].numel();
  return src[0];
}

void Activation::forward(std::span<const Tensor* const> src, Tensor& dst) {
  kernel_->forward(src[0]->data(), dst.data(), n_);
}

void Activation::backward(std::span<const Tensor* const> src, const Tensor& dst,
                          const Tensor& d_dst, std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr) return;
  kernel_->backward(src[0]->data(), dst.data(), d_dst.data(), d_src[0]->data(), n_);
}

}  // namespace nnperf
