// AdaptiveAvgPool2d: plans the shapes; the loops (the mean over each PyTorch window, the
// gradient spread evenly back over it) are kernels/pool.h's.
#include "nnperf/nn/global_pool.h"

#include <fmt/format.h>

#include <algorithm>

#include "nnperf/core/error.h"
#include "nnperf/kernels/pool.h"

namespace nnperf {

AdaptiveAvgPool2d::AdaptiveAvgPool2d(int64_t out_h, int64_t out_w) : out_h_(out_h), out_w_(out_w) {
  if (out_h_ <= 0 || out_w_ <= 0) {
    throw Error(
        fmt::format("AdaptiveAvgPool2d({}x{}): the output size must be positive", out_h_, out_w_));
  }
}

std::string AdaptiveAvgPool2d::describe() const {
  return fmt::format("AdaptiveAvgPool2d({}x{})", out_h_, out_w_);
}

Shape AdaptiveAvgPool2d::plan(std::span<const Shape> src, const PlanContext& ctx) {
  if (src.size() != 1) {
    throw Error(fmt::format("{}: expected 1 input, got {}", describe(), src.size()));
  }
  const Shape& x = src[0];
  if (x.rank() != 4 || x[2] < 1 || x[3] < 1) {
    throw Error(fmt::format("{}: expected input [mb, c, h, w] with h, w >= 1, got {}", describe(),
                            x.str()));
  }
  planes_ = x[0] * x[1];
  ih_ = x[2];
  iw_ = x[3];
  threads_ = std::max(1, ctx.threads);
  return Shape{x[0], x[1], out_h_, out_w_};
}

void AdaptiveAvgPool2d::forward(std::span<const Tensor* const> src, Tensor& dst) {
  adaptive_avgpool2d_forward(PoolShape{planes_, ih_, iw_, out_h_, out_w_}, src[0]->data(),
                             dst.data(), threads_);
}

void AdaptiveAvgPool2d::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                                 const Tensor& d_dst, std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr) return;
  adaptive_avgpool2d_backward(PoolShape{planes_, ih_, iw_, out_h_, out_w_}, d_dst.data(),
                              d_src[0]->data(), threads_);
}

double AdaptiveAvgPool2d::forward_flops() const {
  // Each output reads its window; windows tile the input exactly when out divides in.
  double adds = 0.0;
  for (int64_t oy = 0; oy < out_h_; ++oy) {
    for (int64_t ox = 0; ox < out_w_; ++ox) {
      adds += static_cast<double>(
          (adaptive_window_end(oy, ih_, out_h_) - adaptive_window_start(oy, ih_, out_h_)) *
          (adaptive_window_end(ox, iw_, out_w_) - adaptive_window_start(ox, iw_, out_w_)));
    }
  }
  return static_cast<double>(planes_) * (adds + static_cast<double>(out_h_ * out_w_));
}

}  // namespace nnperf
