// Flatten: a copy into the planned [mb, features] output, and back for the gradient.
#include "nnperf/nn/flatten.h"

#include <fmt/format.h>

#include <cstring>

#include "nnperf/core/error.h"

namespace nnperf {

Shape Flatten::plan(std::span<const Shape> src, const PlanContext& /*ctx*/) {
  if (src.size() != 1) throw Error(fmt::format("Flatten: expected 1 input, got {}", src.size()));
  if (src[0].rank() < 2) {
    throw Error(
        fmt::format("Flatten: expected input [mb, ...] of rank >= 2, got {}", src[0].str()));
  }
  n_ = src[0].numel();
  const int64_t mb = src[0][0];
  return Shape{mb, mb == 0 ? 0 : n_ / mb};
}

void Flatten::forward(std::span<const Tensor* const> src, Tensor& dst) {
  if (n_ > 0) std::memcpy(dst.data(), src[0]->data(), static_cast<std::size_t>(n_) * sizeof(float));
}

void Flatten::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                       const Tensor& d_dst, std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr || n_ == 0) return;
  std::memcpy(d_src[0]->data(), d_dst.data(), static_cast<std::size_t>(n_) * sizeof(float));
}

}  // namespace nnperf
