// Add: one pass for the first two inputs, one add_inplace per further input, in slices split
// between the plan's threads.
#include "nnperf/nn/add.h"

#include <fmt/format.h>

#include <cstring>

#include "nnperf/core/error.h"
#include "nnperf/kernels/elementwise.h"

namespace nnperf {

Shape Add::plan(std::span<const Shape> src, const PlanContext& ctx) {
  if (src.size() < 2)
    throw Error(fmt::format("Add: expected 2 or more inputs, got {}", src.size()));
  for (std::size_t i = 1; i < src.size(); ++i) {
    if (src[i] != src[0]) {
      throw Error(fmt::format("Add: every input must have the shape of input 0, {}; input {} is {}",
                              src[0].str(), i, src[i].str()));
    }
  }
  n_ = src[0].numel();
  inputs_ = static_cast<int64_t>(src.size());
  threads_ = ctx.threads;
  return src[0];
}

void Add::forward(std::span<const Tensor* const> src, Tensor& dst) {
  float* y = dst.data();
  for_slices(n_, threads_, [&](int64_t lo, int64_t hi) {
    add_elementwise(src[0]->data() + lo, src[1]->data() + lo, y + lo, hi - lo);
    for (std::size_t i = 2; i < src.size(); ++i) add_inplace(y + lo, src[i]->data() + lo, hi - lo);
  });
}

void Add::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                   const Tensor& d_dst, std::span<Tensor* const> d_src) {
  for (Tensor* d : d_src) {
    if (d == nullptr || n_ == 0) continue;
    float* dx = d->data();
    const float* dy = d_dst.data();
    for_slices(n_, threads_, [&](int64_t lo, int64_t hi) {
      std::memcpy(dx + lo, dy + lo, static_cast<std::size_t>(hi - lo) * sizeof(float));
    });
  }
}

double Add::forward_flops() const {
  return static_cast<double>(n_) * static_cast<double>(inputs_ - 1);
}

}  // namespace nnperf
