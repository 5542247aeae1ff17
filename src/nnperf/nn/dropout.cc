// Dropout: the mask is drawn in the forward (one uniform per element; the classifier layers it
// sits in are a few thousand elements per image) and kept for the backward.
#include "nnperf/nn/dropout.h"

#include <fmt/format.h>

#include <cstring>

#include "nnperf/core/error.h"
#include "nnperf/kernels/elementwise.h"

namespace nnperf {

Dropout::Dropout(double p, uint64_t seed) : p_(p), rng_(seed) {
  if (!(p_ >= 0.0 && p_ < 1.0)) {
    throw Error(fmt::format("Dropout: p = {} must be in [0, 1)", p_));
  }
}

std::string Dropout::describe() const { return fmt::format("Dropout(p={})", p_); }

Shape Dropout::plan(std::span<const Shape> src, const PlanContext& ctx) {
  if (src.size() != 1) {
    throw Error(fmt::format("{}: expected 1 input, got {}", describe(), src.size()));
  }
  training_ = ctx.training;
  n_ = src[0].numel();
  mask_.assign(training_ ? static_cast<std::size_t>(n_) : 0, 0.0f);
  return src[0];
}

void Dropout::forward(std::span<const Tensor* const> src, Tensor& dst) {
  const float* x = src[0]->data();
  float* y = dst.data();
  if (!training_) {
    if (n_ > 0 && y != x) std::memcpy(y, x, static_cast<std::size_t>(n_) * sizeof(float));
    return;
  }
  const double keep = 1.0 - p_;
  const float scale = static_cast<float>(1.0 / keep);
  for (int64_t i = 0; i < n_; ++i) mask_[i] = rng_.uniform() < keep ? scale : 0.0f;
  multiply(x, mask_.data(), y, n_);
}

void Dropout::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                       const Tensor& d_dst, std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr) return;
  const float* dy = d_dst.data();
  float* dx = d_src[0]->data();
  if (!training_) {
    if (n_ > 0) std::memcpy(dx, dy, static_cast<std::size_t>(n_) * sizeof(float));
    return;
  }
  multiply(dy, mask_.data(), dx, n_);
}

double Dropout::forward_flops() const { return training_ ? static_cast<double>(n_) : 0.0; }

}  // namespace nnperf
