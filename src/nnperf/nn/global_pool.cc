// AdaptiveAvgPool2d: per output pixel, the mean over its PyTorch window; one (image, channel)
// plane per OpenMP job. Backward spreads each output gradient evenly over its window.
#include "nnperf/nn/global_pool.h"

#include <fmt/format.h>

#include <algorithm>

#include "nnperf/core/error.h"

namespace nnperf {

namespace {
constexpr int64_t kMinElementsPerThread = 1 << 15;

int useful_threads(int threads, int64_t elements, int64_t jobs) {
  return static_cast<int>(std::clamp<int64_t>(elements / kMinElementsPerThread, 1,
                                              std::min<int64_t>(jobs, std::max(1, threads))));
}

int64_t window_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t window_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }
}  // namespace

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
  const float* x = src[0]->data();
  float* y = dst.data();
  const int64_t in_plane = ih_ * iw_, out_plane = out_h_ * out_w_;
  const int t = useful_threads(threads_, planes_ * std::max(in_plane, out_plane), planes_);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t pl = 0; pl < planes_; ++pl) {
    const float* xp = x + pl * in_plane;
    for (int64_t oy = 0; oy < out_h_; ++oy) {
      const int64_t h0 = window_start(oy, ih_, out_h_), h1 = window_end(oy, ih_, out_h_);
      for (int64_t ox = 0; ox < out_w_; ++ox) {
        const int64_t w0 = window_start(ox, iw_, out_w_), w1 = window_end(ox, iw_, out_w_);
        float sum = 0.0f;
        for (int64_t iy = h0; iy < h1; ++iy) {
          for (int64_t ix = w0; ix < w1; ++ix) sum += xp[iy * iw_ + ix];
        }
        y[pl * out_plane + oy * out_w_ + ox] = sum / static_cast<float>((h1 - h0) * (w1 - w0));
      }
    }
  }
}

void AdaptiveAvgPool2d::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                                 const Tensor& d_dst, std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr) return;
  const float* dy = d_dst.data();
  float* dx = d_src[0]->data();
  const int64_t in_plane = ih_ * iw_, out_plane = out_h_ * out_w_;
  const int t = useful_threads(threads_, planes_ * std::max(in_plane, out_plane), planes_);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t pl = 0; pl < planes_; ++pl) {
    float* dxp = dx + pl * in_plane;
    std::fill(dxp, dxp + in_plane, 0.0f);
    for (int64_t oy = 0; oy < out_h_; ++oy) {
      const int64_t h0 = window_start(oy, ih_, out_h_), h1 = window_end(oy, ih_, out_h_);
      for (int64_t ox = 0; ox < out_w_; ++ox) {
        const int64_t w0 = window_start(ox, iw_, out_w_), w1 = window_end(ox, iw_, out_w_);
        const float g =
            dy[pl * out_plane + oy * out_w_ + ox] / static_cast<float>((h1 - h0) * (w1 - w0));
        for (int64_t iy = h0; iy < h1; ++iy) {
          for (int64_t ix = w0; ix < w1; ++ix) dxp[iy * iw_ + ix] += g;
        }
      }
    }
  }
}

double AdaptiveAvgPool2d::forward_flops() const {
  // Each output reads its window; windows tile the input exactly when out divides in.
  double adds = 0.0;
  for (int64_t oy = 0; oy < out_h_; ++oy) {
    for (int64_t ox = 0; ox < out_w_; ++ox) {
      adds += static_cast<double>((window_end(oy, ih_, out_h_) - window_start(oy, ih_, out_h_)) *
                                  (window_end(ox, iw_, out_w_) - window_start(ox, iw_, out_w_)));
    }
  }
  return static_cast<double>(planes_) * (adds + static_cast<double>(out_h_ * out_w_));
}

}  // namespace nnperf
