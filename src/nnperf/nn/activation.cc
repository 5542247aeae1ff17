// Activation layer: the table row's forward/backward over the whole tensor, in slices split
// between the plan's threads (element-wise: the same floats on any number).
#include "nnperf/nn/activation.h"

#include <fmt/format.h>

#include "nnperf/core/error.h"
#include "nnperf/kernels/elementwise.h"

namespace nnperf {

Shape Activation::plan(std::span<const Shape> src, const PlanContext& ctx) {
  if (src.size() != 1) {
    throw Error(fmt::format("{}: expected 1 input, got {}", describe(), src.size()));
  }
  if (src[0].rank() < 1)
    throw Error(fmt::format("{}: expected a tensor, got a scalar", describe()));
  n_ = src[0].numel();
  threads_ = ctx.threads;
  return src[0];
}

std::string Activation::dispatch() const {
  if (fused_into_.empty()) return {};
  return fmt::format("fused into {} (its layer applies the ReLU both ways)", fused_into_);
}

void Activation::forward(std::span<const Tensor* const> src, Tensor& dst) {
  const float* x = src[0]->data();
  float* y = dst.data();
  for_slices(n_, threads_,
             [&](int64_t lo, int64_t hi) { kernel_->forward(x + lo, y + lo, hi - lo); });
}

void Activation::backward(std::span<const Tensor* const> src, const Tensor& dst,
                          const Tensor& d_dst, std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr) return;
  const float *x = src[0]->data(), *y = dst.data(), *dy = d_dst.data();
  float* dx = d_src[0]->data();
  for_slices(n_, threads_, [&](int64_t lo, int64_t hi) {
    kernel_->backward(x + lo, y + lo, dy + lo, dx + lo, hi - lo);
  });
}

}  // namespace nnperf
