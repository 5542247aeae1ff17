#include "nnperf/nn/relu6.h"

#include <fmt/format.h>

#include "nnperf/core/error.h"
#include "nnperf/kernels/elementwise.h"

namespace nnperf {

Shape ReLU6::plan(std::span<const Shape> src, const PlanContext& /*ctx*/) {
  if (src.size() != 1) throw Error(fmt::format("ReLU6: expected 1 input, got {}", src.size()));
  n_ = src[0].numel();
  return src[0];
}

void ReLU6::forward(std::span<const Tensor* const> src, Tensor& dst) {
  clamp(src[0]->data(), dst.data(), n_, 0.0f, 6.0f);
}

void ReLU6::backward(std::span<const Tensor* const> src, const Tensor& /*dst*/, const Tensor& d_dst,
                     std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr) return;
  clamp_backward(src[0]->data(), d_dst.data(), d_src[0]->data(), n_, 0.0f, 6.0f);
}

}  // namespace nnperf
