// MaxPool2d / AvgPool2d: plain loops over output pixels, one (image, channel) plane per OpenMP
// job. Pooling is memory-bound (k*k loads per output, no reuse worth blocking for at these sizes).
#include "nnperf/nn/pool.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "nnperf/core/error.h"

namespace nnperf {

namespace {
constexpr int64_t kMinElementsPerThread = 1 << 15;

int useful_threads(int threads, int64_t elements, int64_t jobs) {
  return static_cast<int>(std::clamp<int64_t>(elements / kMinElementsPerThread, 1,
                                              std::min<int64_t>(jobs, std::max(1, threads))));
}

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode) {
  int64_t out =
      floor_div(in + 2 * pad - (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && out > 0 && (out - 1) * stride >= in + pad) --out;
  return out;
}

Pool2dBase::Pool2dBase(const char* kind, int64_t kernel, int64_t stride, int64_t pad,
                       bool ceil_mode)
    : kind_(kind), k_(kernel), s_(stride == 0 ? kernel : stride), p_(pad), ceil_(ceil_mode) {
  if (k_ <= 0 || s_ <= 0 || p_ < 0) {
    throw Error(
        fmt::format("{}: kernel and stride must be positive, padding >= 0", base_describe()));
  }
  if (2 * p_ > k_) {
    // PyTorch: "pad should be at most half of effective kernel size".
    throw Error(
        fmt::format("{}: padding {} is more than half the kernel {}", base_describe(), p_, k_));
  }
}

std::string Pool2dBase::base_describe() const {
  std::string s = fmt::format("{}(k{}, s{}", kind_, k_, s_);
  if (p_ != 0) s += fmt::format(", p{}", p_);
  if (ceil_) s += ", ceil";
  return s + ")";
}

Shape Pool2dBase::plan(std::span<const Shape> src, const PlanContext& ctx) {
  const std::string me = describe();
  if (src.size() != 1) throw Error(fmt::format("{}: expected 1 input, got {}", me, src.size()));
  const Shape& x = src[0];
  if (x.rank() != 4) {
    throw Error(fmt::format("{}: expected input [mb, c, h, w], got {}", me, x.str()));
  }
  const int64_t oh = pool_output_size(x[2], k_, s_, p_, ceil_);
  const int64_t ow = pool_output_size(x[3], k_, s_, p_, ceil_);
  if (oh < 1 || ow < 1) {
    int64_t min_in = 1;
    while (pool_output_size(min_in, k_, s_, p_, ceil_) < 1) ++min_in;
    throw Error(fmt::format(
        "{}: input {} is too small: the output would be {}x{}; this layer needs at least {}x{}", me,
        x.str(), oh, ow, min_in, min_in));
  }
  planes_ = x[0] * x[1];
  ih_ = x[2];
  iw_ = x[3];
  oh_ = oh;
  ow_ = ow;
  training_ = ctx.training;
  threads_ = std::max(1, ctx.threads);
  return Shape{x[0], x[1], oh, ow};
}

void Pool2dBase::window(int64_t oy, int64_t ox, int64_t& h0, int64_t& h1, int64_t& w0,
                        int64_t& w1) const {
  h0 = oy * s_ - p_;
  w0 = ox * s_ - p_;
  h1 = std::min(h0 + k_, ih_);
  w1 = std::min(w0 + k_, iw_);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
}

// ---- MaxPool2d ----
// Per output row: the column-wise max over the window's input rows into a row buffer (a
// contiguous, vectorisable pass), then the max over each window's columns of that row. NaN
// propagates through a separate flag (max() alone would drop it). The argmax, needed only for
// training, is then the first window element in scan order equal to the max, or the last NaN:
// PyTorch's rule "if (val > maxval || isnan(val)) take it".

Shape MaxPool2d::plan(std::span<const Shape> src, const PlanContext& ctx) {
  const Shape out = Pool2dBase::plan(src, ctx);
  if (ih_ * iw_ > std::numeric_limits<int32_t>::max()) {
    throw Error(fmt::format("{}: input planes above 2^31 elements are not supported", describe()));
  }
  argmax_.assign(training_ ? static_cast<std::size_t>(planes_ * oh_ * ow_) : 0, 0);
  threads_used_ = useful_threads(threads_, planes_ * oh_ * ow_ * k_ * k_, planes_);
  rows_.assign(static_cast<std::size_t>(threads_used_ * iw_), 0.0f);
  return out;
}

void MaxPool2d::forward(std::span<const Tensor* const> src, Tensor& dst) {
  const float* x = src[0]->data();
  float* y = dst.data();
  int32_t* arg = training_ ? argmax_.data() : nullptr;
  const int64_t in_plane = ih_ * iw_, out_plane = oh_ * ow_, iw = iw_;
  const int t = threads_used_;
  float* rows = rows_.data();
#pragma omp parallel num_threads(t) if (t > 1)
  {
    float* colmax = rows + static_cast<int64_t>(omp_get_thread_num()) * iw;
#pragma omp for schedule(static)
    for (int64_t pl = 0; pl < planes_; ++pl) {
      const float* xp = x + pl * in_plane;
      for (int64_t oy = 0; oy < oh_; ++oy) {
        int64_t h0, h1, w0, w1;
        window(oy, 0, h0, h1, w0, w1);
        std::memcpy(colmax, xp + h0 * iw, static_cast<std::size_t>(iw) * sizeof(float));
        bool nan = false;
        for (int64_t iy = h0 + 1; iy < h1; ++iy) {
          const float* row = xp + iy * iw;
          for (int64_t ix = 0; ix < iw; ++ix) colmax[ix] = std::max(colmax[ix], row[ix]);
        }
        for (int64_t iy = h0; iy < h1; ++iy) {
          const float* row = xp + iy * iw;
          int64_t n = 0;
          for (int64_t ix = 0; ix < iw; ++ix) n += row[ix] != row[ix];
          nan |= n != 0;
        }
        float* yrow = y + pl * out_plane + oy * ow_;
        for (int64_t ox = 0; ox < ow_; ++ox) {
          window(oy, ox, h0, h1, w0, w1);
          float best = colmax[w0];
          for (int64_t ix = w0 + 1; ix < w1; ++ix) best = std::max(best, colmax[ix]);
          yrow[ox] = best;
        }
        if (!nan && arg == nullptr) continue;
        // Rare (NaN in these rows) or training: rescan each window in PyTorch's order.
        for (int64_t ox = 0; ox < ow_; ++ox) {
          window(oy, ox, h0, h1, w0, w1);
          float best = yrow[ox];
          int64_t best_i = -1;
          for (int64_t iy = h0; iy < h1; ++iy) {  // the last NaN wins, as in PyTorch
            for (int64_t ix = w0; ix < w1; ++ix) {
              if (std::isnan(xp[iy * iw + ix])) {
                best = xp[iy * iw + ix];
                best_i = iy * iw + ix;
              }
            }
          }
          for (int64_t iy = h0; iy < h1 && best_i < 0; ++iy) {
            for (int64_t ix = w0; ix < w1; ++ix) {
              if (xp[iy * iw + ix] == best) {
                best_i = iy * iw + ix;
                break;
              }
            }
          }
          yrow[ox] = best;
          if (arg != nullptr) arg[pl * out_plane + oy * ow_ + ox] = static_cast<int32_t>(best_i);
        }
      }
    }
  }
}

void MaxPool2d::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                         const Tensor& d_dst, std::span<Tensor* const> d_src) {
  NNPERF_CHECK(training_, "{}: backward() needs a plan for training", describe());
  if (d_src[0] == nullptr) return;
  const float* dy = d_dst.data();
  float* dx = d_src[0]->data();
  const int32_t* arg = argmax_.data();
  const int64_t in_plane = ih_ * iw_, out_plane = oh_ * ow_;
  const int t = useful_threads(threads_, planes_ * (in_plane + out_plane), planes_);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t pl = 0; pl < planes_; ++pl) {
    float* dxp = dx + pl * in_plane;
    std::fill(dxp, dxp + in_plane, 0.0f);
    for (int64_t o = 0; o < out_plane; ++o) dxp[arg[pl * out_plane + o]] += dy[pl * out_plane + o];
  }
}

double MaxPool2d::forward_flops() const {
  return static_cast<double>(planes_ * oh_ * ow_) * static_cast<double>(k_ * k_);
}

// ---- AvgPool2d ----

std::string AvgPool2d::describe() const {
  std::string s = base_describe();
  if (!count_include_pad_ && p_ > 0) s.insert(s.size() - 1, ", exclude pad");
  return s;
}

int64_t AvgPool2d::divisor(int64_t oy, int64_t ox) const {
  const int64_t h0 = oy * s_ - p_, w0 = ox * s_ - p_;
  if (count_include_pad_) {
    const int64_t h1 = std::min(h0 + k_, ih_ + p_), w1 = std::min(w0 + k_, iw_ + p_);
    return (h1 - h0) * (w1 - w0);
  }
  int64_t a, b, c, d;
  window(oy, ox, a, b, c, d);
  return (b - a) * (d - c);
}

void AvgPool2d::forward(std::span<const Tensor* const> src, Tensor& dst) {
  const float* x = src[0]->data();
  float* y = dst.data();
  const int64_t in_plane = ih_ * iw_, out_plane = oh_ * ow_;
  const int t = useful_threads(threads_, planes_ * out_plane * k_ * k_, planes_);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t pl = 0; pl < planes_; ++pl) {
    const float* xp = x + pl * in_plane;
    for (int64_t oy = 0; oy < oh_; ++oy) {
      for (int64_t ox = 0; ox < ow_; ++ox) {
        int64_t h0, h1, w0, w1;
        window(oy, ox, h0, h1, w0, w1);
        float sum = 0.0f;
        for (int64_t iy = h0; iy < h1; ++iy) {
          for (int64_t ix = w0; ix < w1; ++ix) sum += xp[iy * iw_ + ix];
        }
        const int64_t div = divisor(oy, ox);
        y[pl * out_plane + oy * ow_ + ox] = div > 0 ? sum / static_cast<float>(div) : 0.0f;
      }
    }
  }
}

void AvgPool2d::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                         const Tensor& d_dst, std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr) return;
  const float* dy = d_dst.data();
  float* dx = d_src[0]->data();
  const int64_t in_plane = ih_ * iw_, out_plane = oh_ * ow_;
  const int t = useful_threads(threads_, planes_ * out_plane * k_ * k_, planes_);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t pl = 0; pl < planes_; ++pl) {
    float* dxp = dx + pl * in_plane;
    std::fill(dxp, dxp + in_plane, 0.0f);
    for (int64_t oy = 0; oy < oh_; ++oy) {
      for (int64_t ox = 0; ox < ow_; ++ox) {
        const int64_t div = divisor(oy, ox);
        if (div <= 0) continue;
        const float g = dy[pl * out_plane + oy * ow_ + ox] / static_cast<float>(div);
        int64_t h0, h1, w0, w1;
        window(oy, ox, h0, h1, w0, w1);
        for (int64_t iy = h0; iy < h1; ++iy) {
          for (int64_t ix = w0; ix < w1; ++ix) dxp[iy * iw_ + ix] += g;
        }
      }
    }
  }
}

double AvgPool2d::forward_flops() const {
  return static_cast<double>(planes_ * oh_ * ow_) * static_cast<double>(k_ * k_ + 1);
}

}  // namespace nnperf
