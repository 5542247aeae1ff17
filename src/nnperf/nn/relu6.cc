#include "nnperf/nn/relu6.h"

#include <fmt/format.h>

#include <algorithm>

#include "nnperf/core/error.h"

namespace nnperf {

Shape ReLU6::plan(std::span<const Shape> src, const PlanContext& /*ctx*/) {
  if (src.size() != 1) throw Error(fmt::format("ReLU6: expected 1 input, got {}", src.size()));
  n_ = src[0].numel();
  return src[0];
}

void ReLU6::forward(std::span<const Tensor* const> src, Tensor& dst) {
  const float* x = src[0]->data();
  float* y = dst.data();
  for (int64_t i = 0; i < n_; ++i) y[i] = std::min(std::max(x[i], 0.0f), 6.0f);
}

void ReLU6::backward(std::span<const Tensor* const> src, const Tensor& /*dst*/, const Tensor& d_dst,
                     std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr) return;
  const float* x = src[0]->data();
  const float* dy = d_dst.data();
  float* dx = d_src[0]->data();
  for (int64_t i = 0; i < n_; ++i) dx[i] = (x[i] > 0.0f && x[i] < 6.0f) ? dy[i] : 0.0f;
}

}  // namespace nnperf
